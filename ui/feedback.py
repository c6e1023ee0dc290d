"""Messages in the page: engine errors in one clear line, the datasets' content warning."""

from __future__ import annotations

import contextlib
import hashlib
import re
from typing import Any, Callable, Iterator

import streamlit as st

from biaslens import lab
from biaslens.datasets import DATASETS, PairDataset, canonical_name
from biaslens.errors import BiaslensError, DatasetNotFoundError, HubUnreachableError, InputError

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
        from .settings import current, model_label

        named = re.search(r"(?:to download|is set and|HTTP \d+ for) (\S+?)(?::|\.? is not|\. |$)", text)
        name = named.group(1).rstrip(".") if named else current().model
        return (f"**The model {model_label(name)} is not on this machine, and the Hugging Face hub cannot be "
                "reached from here** to download it.")
    what = text.split(" not found and ")[0].strip() or "A data file"
    where = re.search(r"from (https?://\S+?) and put", text)
    fetch = f" (it is at {where.group(1)}: download it on a machine with network)" if where else ""
    return f"**{what} is not on this machine** and cannot be downloaded from here{fetch}."


def explain(exc: BaseException) -> tuple[str, str | None]:
    """(message, hint) for an exception: the engine's one line, plus what to do in the app."""
    if isinstance(exc, BiaslensError):
        if isinstance(exc, HubUnreachableError):
            return _missing_message(exc), LOCAL_FOLDER_HINT
        if isinstance(exc, DatasetNotFoundError):
            return _missing_message(exc), DATASET_HINT
        return str(exc), None
    first = (str(exc).strip().splitlines() or [""])[0]
    return f"Unexpected error ({type(exc).__name__}): {first}", "The rest of the app keeps working; please report this if it persists."


def show_error(exc: BaseException, *, where=None) -> None:
    """Show an exception as a clear message in the page (or in `where`, e.g. st.sidebar), never a traceback.

    Something missing on this machine (a hub model without network, a dataset not downloaded) is
    no error of the user's: it gets a calm note with the next action, and a button for it.
    """
    target = where if where is not None else st
    message, hint = explain(exc)
    if isinstance(exc, MISSING):
        target.info(message + (f"\n\n{hint}" if hint else ""), icon=":material/info:")
        if where is None:
            _offer_next_action(exc)
        return
    icon = ":material/edit:" if isinstance(exc, InputError) else ":material/error:"
    target.error(message + (f"\n\n{hint}" if hint else ""), icon=icon)


def _offer_next_action(exc: BaseException) -> None:
    """The button that goes with a missing model (the offline lab model) or dataset (a lab model's own pairs)."""
    from .settings import current, lab_model_name, offer_lab_model, use_lab_pairs

    if isinstance(exc, HubUnreachableError):
        offer_lab_model("main")
        return
    model = lab.lab_model_of(current().model)
    if model is not None:
        key = "feedback.lab_pairs." + hashlib.sha1(str(exc).encode()).hexdigest()[:10]
        st.button(f"Use the held-out pairs of {lab_model_name(model)}", key=key, icon=":material/science:", on_click=use_lab_pairs, args=(model,))


@contextlib.contextmanager
def guard(where=None) -> Iterator[None]:
    """Run engine work; a failure becomes a message in the page and the page goes on.

    Streamlit's own control flow (st.stop, st.rerun, a user's click interrupting a run)
    is not an `Exception`, so it passes through untouched.
    """
    try:
        yield
    except Exception as exc:  # shown to the user, never swallowed silently
        show_error(exc, where=where)


def attempt(fn: Callable[..., Any], *args: Any, where=None, **kwargs: Any) -> Any:
    """`fn(*args, **kwargs)`, or None after showing why it failed (see `guard`)."""
    try:
        return fn(*args, **kwargs)
    except Exception as exc:  # shown to the user, never swallowed silently
        show_error(exc, where=where)
        return None


def content_warning(dataset: PairDataset) -> None:
    """The short content warning and the dataset's known caveats, with a link to its source.

    A bias-lab model's held-out pairs are synthetic (names and occupations): they get a note saying so instead.
    """
    if lab.lab_model_of_pairs(dataset.path) is not None:
        st.info("Synthetic pairs of the bias lab: its made-up group words and attributes, with the association it planted.",
                icon=":material/science:")
        return
    key = canonical_name(dataset.name)
    source = DATASETS.get(key) if key else None
    lines = ["**Content warning:** the pairs contain offensive stereotypes, shown here only to measure them."]
    if source is not None:
        lines.append(f"{source.caveat} Source: [{source.title}]({source.homepage}) ({source.license}).")
    else:
        lines.append(
            "Benchmarks of this kind are noisy: Blodgett et al. (2021) report serious reliability problems in "
            "CrowS-Pairs and StereoSet (https://aclanthology.org/2021.acl-long.81/). Treat scores as rough signals."
        )
    st.warning("  \n".join(lines), icon=":material/warning:")
