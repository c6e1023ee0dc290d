"""biaslens: token-level social bias in masked and causal language models.

The public API, importable from the package root:

    load_model, LanguageModel     biaslens.engine.models (MaskedLM, CausalLM: the two kinds)
    load_dataset, Pair            biaslens.data.datasets (BBQ and Winogender: ChoiceDataset, ChoiceItem, biaslens.data.multiple_choice)
    evaluate_choices, inspect_item  biaslens.choices.evaluation (multiple-choice items under lm-eval's and BBQ's conventions;
      ChoiceRun, custom_item          a run's result, an item typed in)
    inspect_pair, evaluate        biaslens.lab.checked (biaslens.engine.evaluation's, with the model's sanity verdict)
    available_metrics             biaslens.engine.pairs (what a model can give, and why not)
    METRICS                       biaslens.engine.metrics
    score, score_words,           biaslens.engine.text_scores (any text, token by token: TokenScores,
      score_sequences               WordScores, SequenceScores)

The package is layered (docs/architecture.md): errors, paths and version at the base, then data/, engine/,
analyses/, lab/ and kurita/, figures/ and serving/, report/ and cli/; a layer imports only the layers below it
(`lint-imports` checks it, `.importlinter`).
"""

from typing import TYPE_CHECKING

from .engine import display as _display
from .version import __version__ as __version__

if TYPE_CHECKING:  # the names below, for type checkers and the API reference (griffe); at run time __getattr__ imports them
    from .data.datasets import Pair as Pair, PairDataset as PairDataset, load_dataset as load_dataset
    from .data.multiple_choice import ChoiceDataset as ChoiceDataset, ChoiceItem as ChoiceItem
    from .choices.evaluation import ChoiceRun as ChoiceRun, custom_item as custom_item
    from .choices.evaluation import evaluate_choices as evaluate_choices, inspect_item as inspect_item
    from .engine.cache import ResultCache as ResultCache
    from .engine.evaluation import EvaluationResult as EvaluationResult, PairInspection as PairInspection
    from .lab.checked import evaluate as evaluate, inspect_pair as inspect_pair
    from .engine.metrics import METRICS as METRICS
    from .engine.models import CausalLM as CausalLM, LanguageModel as LanguageModel, MaskedLM as MaskedLM, load_model as load_model
    from .engine.conventions import CONVENTIONS as CONVENTIONS
    from .engine.pairs import available_metrics as available_metrics
    from .engine.presets import PRESETS as PRESETS
    from .engine.text_scores import SequenceScores as SequenceScores, TokenScores as TokenScores, WordScores as WordScores
    from .engine.text_scores import score as score, score_sequences as score_sequences, score_words as score_words

_EXPORTS = {
    "load_model": "engine.models",
    "MaskedLM": "engine.models",
    "CausalLM": "engine.models",
    "LanguageModel": "engine.models",
    "CONVENTIONS": "engine.conventions",
    "PRESETS": "engine.presets",
    "load_dataset": "data.datasets",
    "Pair": "data.datasets",
    "PairDataset": "data.datasets",
    "ChoiceDataset": "data.multiple_choice",
    "ChoiceItem": "data.multiple_choice",
    "evaluate_choices": "choices.evaluation",
    "inspect_item": "choices.evaluation",
    "ChoiceRun": "choices.evaluation",
    "custom_item": "choices.evaluation",
    "inspect_pair": "lab.checked",
    "evaluate": "lab.checked",
    "EvaluationResult": "engine.evaluation",
    "PairInspection": "engine.evaluation",
    "available_metrics": "engine.pairs",
    "METRICS": "engine.metrics",
    "ResultCache": "engine.cache",
    "score": "engine.text_scores",
    "score_words": "engine.text_scores",
    "score_sequences": "engine.text_scores",
    "TokenScores": "engine.text_scores",
    "WordScores": "engine.text_scores",
    "SequenceScores": "engine.text_scores",
}


def __getattr__(name: str):
    """Import on first use, so `import biaslens` stays fast (torch loads only when needed)."""
    if name in _EXPORTS:
        import importlib

        return getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
    raise AttributeError(f"module 'biaslens' has no attribute {name!r}")


def _register_renderers() -> None:
    """How results draw themselves in a notebook (`biaslens.engine.display`): the figures layer's renderers, imported
    the first time a result is shown, so `import biaslens` stays light and the engine never imports figures."""
    from .figures import notebook  # noqa: F401  (registers on import)


_display.set_loader(_register_renderers)

__all__ = sorted(_EXPORTS)
