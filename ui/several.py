"""The pair inspector's "Several sentences": any number of sentences typed or pasted, each scored token by token
(`biaslens.score`), drawn aligned in strips (`biaslens.figures.strips`, the chart a notebook shows), the tables to
download. Masked models read with a PLL variant (or AUL's unmasked reading); causal ones each token given the tokens
before it, under the model's first-token policy.
"""

from __future__ import annotations

import streamlit as st

import ui.feedback
import ui.resources
import ui.settings
import ui.tables
from biaslens.data.export import safe_csv
from biaslens.data.sentences import check_sentence
from biaslens.engine.lm import LanguageModel
from biaslens.engine.text_scores import READINGS, TokenScores, score
from biaslens.errors import InputError
from biaslens.figures.strips import STRIP_MEASURES, strips_html

S = "inspector.texts."
#: Most sentences one scoring takes (the server's BIASLENS_MAX_UPLOAD_ROWS, if lower, too).
MAX_SENTENCES = 100
EXAMPLE = "Women don't know how to drive.\nMen don't know how to drive.\nPeople don't know how to drive."
#: The strip measures offered, and the variants' short names.
MEASURES = ("logprob", "surprisal", "entropy", "rank")
VARIANT_NAMES = {"original": "PLL", "within_word_l2r": "PLL-word-l2r", "unmasked": "Unmasked (AUL)"}
TOKEN_COLUMNS = ("text_id", "token_index", "token", "word", "start", "end", "logprob", "surprisal", "rank", "entropy", "scored")


def sentences_of(text: str) -> list[str]:
    """The non-blank lines of `text`, each checked (a control character is refused, naming its line)."""
    lines = [line.strip() for line in text.splitlines()]
    found = []
    for number, line in enumerate(lines, start=1):
        if line:
            found.append(check_sentence(line, f"Line {number}"))
    limit = min(MAX_SENTENCES, ui.resources.server_settings().max_upload_rows)
    if len(found) > limit:
        raise InputError(f"{len(found):,} sentences: this page scores up to {limit:,} at once (the command line, `biaslens score`, any number).")
    if not found:
        raise InputError("Type or paste at least one sentence, one per line.")
    return found


@st.cache_data(show_spinner=False, max_entries=32)
def _scores(model_key: tuple, fingerprint: str, max_length: int, variant: str | None, texts: tuple[str, ...], _lm: LanguageModel) -> TokenScores:
    with ui.resources.priority().interactive():
        return score(_lm, list(texts), variant=variant, surprisal=True)


def show(settings: ui.settings.Settings) -> None:
    """The form, then the sentences aligned token by token, their tables and downloads."""
    lm = ui.resources.model_or_stop(settings)
    st.session_state.setdefault(S + "input", EXAMPLE)
    with st.form(S + "form", border=True):
        st.text_area(
            "Sentences, one per line",
            key=S + "input",
            height=150,
            help=f"Type or paste up to {MAX_SENTENCES} sentences; each is scored on its own, token by token.",
        )
        variant, reading = None, READINGS[lm.text_variants[0]]
        if len(lm.text_variants) > 1:  # a kind with several readings (a masked model's)
            variant = st.segmented_control(
                "Reading",
                list(lm.text_variants),
                key=S + "variant",
                default=lm.text_variants[0],
                required=True,
                format_func=lambda v: VARIANT_NAMES[v],
                help="PLL: each token masked alone; PLL-word-l2r: with the rest of its word to its right masked too; "
                "Unmasked: nothing masked, one pass (AUL's reading).",
            )
        else:
            policy = lm.first_token_policy or "?"
            st.caption(f"A {ui.feedback.md(lm.kind)} model: {ui.feedback.md(reading)} (first-token policy: {ui.feedback.md(policy)}).")
        submitted = st.form_submit_button("Score these sentences", type="primary", icon=":material/play_arrow:")
    if submitted:
        st.session_state[S + "asked"] = (st.session_state[S + "input"], variant)
    asked = st.session_state.get(S + "asked")
    if asked is None:
        st.info("Type or paste sentences, one per line (an example is ready), then press **Score these sentences**.", icon=":material/edit_note:")
        return
    texts = None
    with ui.feedback.guard():
        texts = sentences_of(asked[0])
    if texts is None:
        return
    tokens = None
    with st.spinner(f"Scoring {len(texts)} sentence{'s' if len(texts) != 1 else ''}…"), ui.feedback.guard():
        tokens = _scores(settings.model_key, lm.fingerprint, lm.max_length, asked[1], tuple(texts), lm)
    if tokens is None:
        return
    show_tokens(tokens)


def show_tokens(tokens: TokenScores) -> None:
    st.subheader("Token by token")
    st.caption(
        f"Each sentence (numbered from 0, as in the tables) is a row of its tokens, aligned with the others: a token they "
        f"all share sits in one column, where they differ it is outlined. Reading: {ui.feedback.md(tokens.scoring.reading)}. Hover a token "
        "for its rank, entropy and word."
    )
    measure = (
        st.segmented_control(
            "Shade by", list(MEASURES), key=S + "measure", default="logprob", required=True, format_func=lambda m: STRIP_MEASURES[m][0]
        )
        or "logprob"
    )
    st.html(strips_html(tokens, unit="token", measure=measure, extra=("rank", "entropy", "word", "start", "end"), max_strips=MAX_SENTENCES))
    sequences = tokens.sequences()
    words = tokens.words()
    tab_texts, tab_words, tab_tokens = st.tabs(["Sentences", "Words", "Tokens"], key=S + "tab", on_change="rerun")
    with tab_texts:
        ui.tables.table(sequences, ["text", "tokens", "logprob_sum", "logprob_mean"], pin=["text_id"], decimals=3)
    with tab_words:
        if tab_words.open:
            ui.tables.table(words, ["text", "tokens", "logprob", "surprisal", "complete"], pin=["text_id", "word"], decimals=3, sortable=True)
    with tab_tokens:
        if tab_tokens.open:
            columns = [c for c in TOKEN_COLUMNS if c in tokens]
            ui.tables.table(tokens, columns[3:], pin=list(columns[:3]), decimals=4, sortable=True)
    with st.container(horizontal=True):
        for label, frame, name, key in (
            ("Tokens (CSV)", tokens, "tokens", "dl_tokens"),
            ("Words (CSV)", words, "words", "dl_words"),
            ("Sentences (CSV)", sequences, "sentences", "dl_sentences"),
        ):
            st.download_button(
                label,
                lambda frame=frame: safe_csv(frame),
                f"biaslens-{name}.csv",
                "text/csv",
                icon=":material/download:",
                key=S + key,
                on_click="ignore",
                help="The table as biaslens score writes it (one row per token, word or sentence), with every column.",
            )


__all__ = ["MAX_SENTENCES", "sentences_of", "show", "show_tokens"]
