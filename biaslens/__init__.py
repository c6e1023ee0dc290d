"""biaslens: token-level social bias in masked language models.

The public API, importable from the package root:

    load_model, MaskedLM          biaslens.models
    load_dataset, Pair            biaslens.datasets
    inspect_pair, evaluate        biaslens.evaluation
    available_metrics             biaslens.evaluation (what a model can give, and why not)
    METRICS                       biaslens.metrics
"""

from typing import TYPE_CHECKING

__version__ = "0.1.0"

if TYPE_CHECKING:  # the names below, for type checkers and the API reference (griffe); at run time __getattr__ imports them
    from .cache import ResultCache
    from .datasets import Pair, PairDataset, load_dataset
    from .evaluation import EvaluationResult, PairInspection, available_metrics, evaluate, inspect_pair
    from .metrics import METRICS
    from .models import MaskedLM, load_model
    from .presets import PRESETS

_EXPORTS = {
    "load_model": "models",
    "MaskedLM": "models",
    "PRESETS": "presets",
    "load_dataset": "datasets",
    "Pair": "datasets",
    "PairDataset": "datasets",
    "inspect_pair": "evaluation",
    "evaluate": "evaluation",
    "EvaluationResult": "evaluation",
    "PairInspection": "evaluation",
    "available_metrics": "evaluation",
    "METRICS": "metrics",
    "ResultCache": "cache",
}


def __getattr__(name: str):
    """Import on first use, so `import biaslens` stays fast (torch loads only when needed)."""
    if name in _EXPORTS:
        import importlib

        return getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
    raise AttributeError(f"module 'biaslens' has no attribute {name!r}")


__all__ = sorted(_EXPORTS)
