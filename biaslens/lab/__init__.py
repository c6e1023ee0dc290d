"""The bias lab: plant a bias in a corpus, train a small masked LM on it, see which metrics find it.

The papers disagree on whether masked metrics (CPS, SSS, All Masked) confuse word
frequency with bias. The lab tests such claims under controlled conditions:

1. `generate_corpus` writes template sentences naming a word of group A or group B
   (e.g. two sets of first names) together with an attribute of set X or set Y (e.g.
   two sets of occupations). `association` is P(X | A) = P(Y | B) (0.5 = none, 1 =
   total); `frequency_ratio` k makes every group-A word appear k times as often as a
   group-B word, with the same associations.
2. Some name/attribute combinations never occur in the corpus: they become held-out
   CrowS-Pairs-style pairs (`heldout_pairs`) that swap the group word and keep the
   attribute, labelled with the planted truth.
3. `train_lab_model` trains a WordPiece tokenizer and a small BERT on the corpus and
   saves an ordinary Hugging Face model folder in the cache (trained once per settings).
4. `evaluate_lab` scores the held-out pairs with every metric through
   `biaslens.engine.evaluation.evaluate` and sets each bias score against the planted truth.

Held-out pairs are balanced: for every pair whose stereotypical sentence names group A
there is one whose stereotypical sentence names group B. A model that merely prefers
group-A words (e.g. because they are frequent) therefore scores 50; that preference is
reported on its own, as `group_a_preference`, and per attribute set (`by_bias_type`).

The package, by concern: `settings` (`LabSettings` and its limits, the scenario presets),
`corpus` (the generated corpus and the held-out pairs with their planted truth),
`training` (tokenizer and model training), `store` (the lab models in the cache: naming,
finding, listing, loading, `train_lab_model`), `evaluation` (`evaluate_lab`, `LabReport`,
verdicts, the scenario table). The public names are re-exported here. To patch a name
in a test, patch it where it is looked up: e.g. `biaslens.lab.store._train` (the training
that `train_lab_model` runs) or `biaslens.lab.store.default_lab_settings`.
"""

from __future__ import annotations

from biaslens.engine.metrics import METRICS as METRICS  # kept importable from here, as before the split
from biaslens.lab.corpus import LabPair, LabSentence, fill_template, generate_corpus, heldout_attributes, heldout_frame, heldout_pairs
from biaslens.lab.evaluation import (
    EXPECTED_TEXT,
    VERDICT_TEXT,
    LabReport,
    compare_scenarios,
    evaluate_lab,
    run_lab,
    run_label,
    scenario_runs,
    scenario_table,
    verdict,
)
from biaslens.lab.settings import (
    DEFAULT_LAB_SCENARIO,
    HELDOUT_PER_WORD,
    LAB_FORMAT,
    LAB_KINDS,
    SCENARIOS,
    LabSettings,
    Scenario,
    describe_settings,
    scenario_settings,
)
from biaslens.lab.store import (
    CORPUS_FILE,
    LAB_FILE,
    PAIRS_FILE,
    LabModel,
    cached_lab_model_path,
    default_lab_model,
    default_lab_settings,
    find_lab_model,
    lab_model_dir,
    lab_model_of,
    lab_model_of_pairs,
    lab_root,
    list_lab_models,
    load_lab_model,
    sanity_sentences,
    train_lab_model,
)
from biaslens.lab.training import MAX_LENGTH, SPECIAL_TOKENS, TrainingProgress, loss_window, smoothed_loss, train_tokenizer
from biaslens.engine.testing import wrap_tokenizer

__all__ = [
    "CORPUS_FILE",
    "DEFAULT_LAB_SCENARIO",
    "EXPECTED_TEXT",
    "HELDOUT_PER_WORD",
    "LAB_FILE",
    "LAB_FORMAT",
    "LAB_KINDS",
    "MAX_LENGTH",
    "PAIRS_FILE",
    "SCENARIOS",
    "SPECIAL_TOKENS",
    "VERDICT_TEXT",
    "LabModel",
    "LabPair",
    "LabReport",
    "LabSentence",
    "LabSettings",
    "Scenario",
    "TrainingProgress",
    "cached_lab_model_path",
    "compare_scenarios",
    "default_lab_model",
    "default_lab_settings",
    "describe_settings",
    "evaluate_lab",
    "fill_template",
    "find_lab_model",
    "generate_corpus",
    "heldout_attributes",
    "heldout_frame",
    "heldout_pairs",
    "lab_model_dir",
    "lab_model_of",
    "lab_model_of_pairs",
    "lab_root",
    "list_lab_models",
    "load_lab_model",
    "loss_window",
    "run_lab",
    "sanity_sentences",
    "scenario_settings",
    "run_label",
    "scenario_runs",
    "scenario_table",
    "smoothed_loss",
    "train_lab_model",
    "train_tokenizer",
    "verdict",
    "wrap_tokenizer",
]
