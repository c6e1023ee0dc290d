"""The model's caveats in the main area, beside the results they qualify.

The sidebar shows the model's sanity verdict, but a sidebar is collapsed on a projector and
easy to miss; a page that shows a result (a verdict, a score, a share) calls `model_banner`
next to it. It shows nothing for a model that predicts its check sentences well and knows
the words of the text at hand, so a trained model's pages stay clean.
"""

from __future__ import annotations

from typing import Iterable

import streamlit as st

from biaslens.engine.models import LanguageModel

from . import resources
from .feedback import md
from .settings import Settings, model_label

#: Distinct texts whose vocabulary is checked at most (a dataset's first pairs are enough to tell).
MAX_TEXTS = 200


def settings_banner(settings: Settings, texts: Iterable[str] | None = None) -> str:
    """`model_banner` for the sidebar's model, loaded from the cache (nothing is shown if it cannot be loaded)."""
    try:
        lm = resources.get_model(settings)
    except Exception:  # the page and the sidebar already say why
        return "unknown"
    return model_banner(settings, lm, texts)


def model_banner(settings: Settings, lm: LanguageModel, texts: Iterable[str] | None = None, *, name: str | None = None) -> str:
    """A warning in the page when the model looks untrained or weak, or when `texts` are mostly out of its vocabulary.

    Returns the model's sanity status ("ok", "weak", "untrained"; "unknown" if the check itself failed).
    """
    try:
        report = resources.sanity(settings, lm)
    except Exception:  # the sidebar says why the check failed; the results still show
        return "unknown"
    shown = md(name or model_label(lm.name))
    if report.status == "untrained":
        st.warning(
            f"**{shown} looks untrained: read these results as noise.** On {report.n_sentences:,} sentences of {md(report.subject)} "
            f"it predicts {report.accuracy:.0f}% of the tokens (a trained model: most of them) and its log-probabilities are close "
            "to uniform, so every score and verdict below reflects random weights, not learned bias.",
            icon=":material/dangerous:",
        )
    elif report.status == "weak":
        st.warning(
            f"**Read these results with care:** {shown} predicts {md(report.subject)} poorly "
            f"(token accuracy {report.accuracy:.0f}%); it may be undertrained or trained on other text.",
            icon=":material/warning:",
        )
    if texts is not None:
        chosen = tuple(dict.fromkeys(str(t) for t in texts))[:MAX_TEXTS]
        if chosen:
            try:
                vocabulary = resources.vocabulary(settings, lm, chosen)
            except Exception:
                return report.status
            if vocabulary.mostly_unknown:
                st.warning(f"**Mostly unknown words for {shown}.** {md(vocabulary.message)}", icon=":material/translate:")
    return report.status


__all__ = ["model_banner", "settings_banner"]
