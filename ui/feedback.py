"""Messages in the page: engine errors in one clear line with the next action (the offline lab model, a lab model's pairs),
the datasets' content warning."""

from __future__ import annotations

import contextlib
import hashlib
import re
from dataclasses import dataclass
from typing import Iterator

import streamlit as st
from streamlit.errors import StreamlitDuplicateElementKey

from biaslens import lab
from biaslens.data.datasets import DATASETS, PairDataset, canonical_name
from biaslens.errors import BiaslensError, DatasetNotFoundError, HubUnreachableError, InputError

from .docs import docs_link
from .progress import ProgressBar
from .settings import CHOOSE, current, lab_model_name, model_label, use_lab_pairs
from .text import code as code, md as md  # pages escape user text with ui.feedback.md and ui.feedback.code

LOCAL_FOLDER_HINT = (
    "**What you can do:** press **Use the offline lab model**: the bias lab's small model, trained on this machine once "
    "(under a minute) and needing no network. Or type the path of a local model folder (saved with `save_pretrained`: "
    "`config.json`, the weights and the tokenizer files) into the **Model** box in the sidebar and press Enter."
)
DATASET_HINT = (
    "**What you can do:** put the file in a folder and name that folder under **Advanced → Data folder** in the sidebar, "
    "or type the file's path into the **Dataset** box."
)
#: Exceptions that mean "something is not on this machine": a calm note with the next step, never a red box.
MISSING = (HubUnreachableError, DatasetNotFoundError)


def header(title: str, about: str, docs: str | None = None) -> None:
    """A page's title, its description (the page's own text, markdown) and a link to its docs page (`docs`, a name of
    `ui.views.DOC_PAGES`: shown in the app)."""
    st.title(title)
    st.caption(about)
    if docs is not None:
        docs_link(docs)


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


def offer_lab_model(where: str = "sidebar") -> None:
    """No hub: offer the bias lab's model, trained here once (no download) and then cached; `where` keys the button. Offered
    once per place and page run: a page with several models not on this machine (a comparison) shows one offer."""
    cached = lab.cached_lab_model_path()
    key = "settings.offline_lab" if where == "sidebar" else f"settings.offline_lab.{where}"
    slot = st.empty()
    with slot.container():
        st.info(
            "No network? Every page also works with the bias lab's small model: "
            + ("it is already trained on this machine." if cached else "it trains here once (under a minute), then stays in the cache."),
            icon=":material/wifi_off:",
        )
        try:
            pressed = st.button("Use the offline lab model", key=key, type="primary", icon=":material/model_training:")
        except StreamlitDuplicateElementKey:  # already offered above, in this run: this second offer goes
            slot.empty()
            return
    if pressed:
        if not cached:
            bar = ProgressBar("Training the lab model", unit="steps")
            model = None
            with guard():
                model = lab.default_lab_model(progress=lambda step, total, _loss: bar(step, total))
            bar.clear()
            if model is None:
                return
            cached = model.path
        # Its held-out pairs too: CrowS-Pairs' words are unknown to it, so they would be scored as letters.
        st.session_state[CHOOSE] = {"model": str(cached), "dataset": str(cached / lab.PAIRS_FILE)}
        st.rerun()
