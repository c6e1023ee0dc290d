"""The one sanity verdict of a model, the one every place shows (app, reports, CLI, sweep).

It lives with the lab because it knows lab models: a lab model is checked on sentences of its own training corpus
(`biaslens.lab.store.sanity_sentences`), any other model on plain English (`biaslens.analyses.sanity.check_model`).
"""

from __future__ import annotations

import threading

from biaslens.analyses.sanity import SanityReport, check_model
from biaslens.engine.models import LanguageModel
from biaslens.lab.store import lab_model_of, sanity_sentences

_VERDICTS: dict[tuple, SanityReport] = {}
_VERDICTS_LOCK = threading.Lock()
#: Verdicts kept (one per model, device and precision); the oldest goes first.
MAX_VERDICTS = 64


def model_verdict(lm: LanguageModel) -> SanityReport:
    """The one sanity verdict of `lm`, computed once per model (fingerprint, device, dtype) and then reused.

    A bias-lab model knows only its synthetic corpus, so it is checked on sentences of that
    corpus ("its training corpus"); any other model on `SANITY_SENTENCES` ("plain English").
    Every place that shows a verdict (app, reports, CLI) calls this, so they always agree.
    """
    key = (lm.name, lm.fingerprint, str(lm.device), str(lm.dtype))
    with _VERDICTS_LOCK:
        if key in _VERDICTS:
            return _VERDICTS[key]
    lab_model = lab_model_of(lm.name) if lm.source == "local" else None
    full = lm.unlimited()  # the check sentences, whatever length limit a server put on the model
    if lab_model is not None:
        report = check_model(full, sanity_sentences(lab_model), subject="its training corpus")
    else:
        report = check_model(full)
    with _VERDICTS_LOCK:
        if len(_VERDICTS) >= MAX_VERDICTS:
            _VERDICTS.pop(next(iter(_VERDICTS)))
        _VERDICTS[key] = report
    return report


__all__ = ["MAX_VERDICTS", "model_verdict"]
