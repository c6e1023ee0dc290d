"""Messages in the page: engine errors in one clear line, the datasets' content warning."""

from __future__ import annotations

import contextlib
import hashlib
import re
from dataclasses import dataclass
from typing import Any, Iterator

import streamlit as st

from biaslens import lab
from biaslens.datasets import DATASETS, PairDataset, canonical_name
from biaslens.errors import BiaslensError, DatasetNotFoundError, HubUnreachableError, InputError

from .settings import current, lab_model_name, model_label, use_lab_pairs

LOCAL_FOLDER_HINT = (
    "**What you can do:** press **Use the offline lab model**: the bias lab's small model, trained on this machine once "
    "(about a minute) and needing no network. Or type the path of a local model folder (saved with `save_pretrained`: "
    "`config.json`, the weights and the tokenizer files) into the **Model** box in the sidebar and press Enter."
)
DATASET_HINT = (
    "**What you can do:** put the file in a folder and name that folder under **Advanced → Data folder** in the sidebar, "
    "or type the file's path into the **Dataset** box."
)
#: Exceptions that mean "something is not on this machine": a calm note with the next step, never a red box.
MISSING = (HubUnreachableError, DatasetNotFoundError)


def _missing_message(exc: BaseException) -> str:
    """The UI's own words for a model or data file that is not on this machine (no CLI flags, no raw errno)."""
    text = str(exc)
    if isinstance(exc, HubUnreachableError):
        named = re.search(r"(?:to download|is set and|HTTP \d+ for) (\S+?)(?::|\.? is not|\. |$)", text)
        name = named.group(1).rstrip(".") if named else current().model
        return f"**The model {md(model_label(name))} is not on this machine, and the Hugging Face hub cannot be reached from here** to download it."
    what = text.split(" not found and ")[0].strip() or "A data file"
    where = re.search(r"from (https?://\S+?) and put", text)
    fetch = f" (it is at {md(where.group(1))}: download it on a machine with network)" if where else ""
    return f"**{md(what)} is not on this machine** and cannot be downloaded from here{fetch}."


# Characters that can start markdown (or HTML) anywhere in a line: links and images ([ ]), HTML and
# autolinks (< >), entities (&), emphasis and strikethrough (* ~), code (`), LaTeX ($), escapes (\\).
_ALWAYS = re.compile(r"([\\`*\[\]<>&~$|])")
# An underscore opens emphasis only at a word's edge (not inside snake_case names).
_EDGE_UNDERSCORE = re.compile(r"(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])")
# A colon followed by text: emoji and icon shortcodes (:smile:, :material/x:) and URL schemes (http://). Streamlit
# replaces shortcodes after markdown has removed backslash escapes, so a zero-width space after the colon breaks them.
_COLON = re.compile(r":(?=\S)")
_SHORTCODE = re.compile(r":(?=[A-Za-z0-9_+/-])")
# Bare web addresses and e-mail addresses that GitHub-flavoured markdown turns into links.
_WWW = re.compile(r"(?i)\b(www)\.")
_AT = re.compile(r"@")
# What makes a line a heading, quote, list item or thematic break when it starts the text.
_LINE_START = re.compile(r"^(\s*)(\d*)([#>+=.)-])")


def md(text: Any) -> str:
    """User-supplied text (a sentence, file or model name, URL value, an engine message quoting them) made safe to put into
    Streamlit markdown: it shows as itself, never as a link, image, HTML, emphasis, icon or formula. One line: newlines become spaces.

    Every message path of the app uses this helper (`show_error`, page warnings and captions).
    """
    out = re.sub(r"\s*[\r\n]+\s*", " ", str(text))
    out = _ALWAYS.sub(r"\\\1", out)
    out = _EDGE_UNDERSCORE.sub(r"\\_", out)
    out = _SHORTCODE.sub(":\u200b", out)
    out = _COLON.sub(r"\\:", out)
    out = _WWW.sub(r"\1\\.", out)
    out = _AT.sub(r"\\@", out)
    return _LINE_START.sub(lambda m: m.group(1) + m.group(2) + "\\" + m.group(3), out)


def code(text: Any) -> str:
    """User-supplied text as inline code (e.g. a command line quoting a typed sentence): a fence longer than any run of
    backticks inside, so the text can never close it and continue as markdown. One line."""
    body = re.sub(r"\s*[\r\n]+\s*", " ", str(text))
    fence = "`" * (max((len(run) for run in re.findall(r"`+", body)), default=0) + 1)
    return f"{fence} {body} {fence}"


def explain(exc: BaseException) -> tuple[str, str | None]:
    """(message, hint) for an exception: the engine's one line (escaped with `md`: it may quote user input), plus what to do in the app."""
    if isinstance(exc, HubUnreachableError):
        return _missing_message(exc), LOCAL_FOLDER_HINT  # escapes the names it quotes itself
    if isinstance(exc, DatasetNotFoundError):
        return _missing_message(exc), DATASET_HINT
    if isinstance(exc, BiaslensError):
        return md(exc), None
    first = (str(exc).strip().splitlines() or [""])[0]
    return md(f"Unexpected error ({type(exc).__name__}): {first}"), "The rest of the app keeps working; please report this if it persists."


def show_error(exc: BaseException, *, where=None, lab_pairs: bool = True) -> None:
    """Show an exception as a clear message in the page (or in `where`, e.g. st.sidebar), never a traceback.

    Something missing on this machine (a hub model without network, a dataset not downloaded) is
    no error of the user's: it gets a calm note with the next action, and a button for it (for a missing
    dataset and a lab model, its held-out pairs; `lab_pairs=False` where the missing file is no pairs file,
    such as WEAT stimuli).
    """
    target = where if where is not None else st
    message, hint = explain(exc)
    if isinstance(exc, MISSING):
        target.info(message + (f"\n\n{hint}" if hint else ""), icon=":material/info:")
        if where is None and (lab_pairs or not isinstance(exc, DatasetNotFoundError)):
            _offer_next_action(exc)
        return
    icon = ":material/edit:" if isinstance(exc, InputError) else ":material/error:"
    target.error(message + (f"\n\n{hint}" if hint else ""), icon=icon)


def _offer_next_action(exc: BaseException) -> None:
    """The button that goes with a missing model (the offline lab model) or dataset (a lab model's own pairs)."""
    from .sidebar import offer_lab_model  # the sidebar shows engine errors with this module: imported when needed

    if isinstance(exc, HubUnreachableError):
        offer_lab_model("main")
        return
    model = lab.lab_model_of(current().model)
    if model is not None:
        key = "feedback.lab_pairs." + hashlib.sha1(str(exc).encode()).hexdigest()[:10]
        st.button(f"Use the held-out pairs of {md(lab_model_name(model))}", key=key, icon=":material/science:", on_click=use_lab_pairs, args=(model,))


@dataclass
class Outcome:
    """What `guard` saw: `failed` is True once the guarded block raised (its message is already in the page)."""

    failed: bool = False
    error: Exception | None = None


@contextlib.contextmanager
def guard(where=None, *, lab_pairs: bool = True) -> Iterator[Outcome]:
    """Run engine work; a failure becomes a one-line message in the page (or in `where`, e.g. st.sidebar) and the page goes on.

        result = None
        with ui.feedback.guard() as outcome:
            result = engine_call(...)
        if outcome.failed: ...

    A `BiaslensError` shows as its own message; anything else as "Unexpected error (Type): first line" (see `explain`);
    `lab_pairs` as in `show_error`. Streamlit's own control flow (st.stop, st.rerun, a user's click interrupting a run)
    is not an `Exception`, so it passes through untouched.
    """
    outcome = Outcome()
    try:
        yield outcome
    except Exception as exc:  # shown to the user, never swallowed silently
        outcome.failed, outcome.error = True, exc
        show_error(exc, where=where, lab_pairs=lab_pairs)


def content_warning(dataset: PairDataset) -> None:
    """The short content warning and the dataset's known caveats, with a link to its source.

    A bias-lab model's held-out pairs are synthetic (names and occupations): they get a note saying so instead.
    """
    if lab.lab_model_of_pairs(dataset.path) is not None:
        st.info(
            "Synthetic pairs of the bias lab: its made-up group words and attributes, with the association it planted.", icon=":material/science:"
        )
        return
    key = canonical_name(dataset.name)
    lines = ["**Content warning:** the pairs contain offensive stereotypes, shown here only to measure them."]
    if key in DATASETS:
        source = DATASETS[key]
        lines.append(f"{source.caveat} Source: [{source.title}]({source.homepage}) ({source.license}).")
    else:
        lines.append(
            "Benchmarks of this kind are noisy: Blodgett et al. (2021) report serious reliability problems in "
            "CrowS-Pairs and StereoSet (https://aclanthology.org/2021.acl-long.81/). Treat scores as rough signals."
        )
    st.warning("  \n".join(lines), icon=":material/warning:")
