"""The zoo's cells of multiple-choice datasets (BBQ, Winogender): one cell per headline statistic of a convention.

A multiple-choice dataset of a plan is scored once per model and precision (`biaslens.choices.evaluate_choices`, every
convention the model asks that applies), and each headline statistic of each convention
(`biaslens.choices.conventions.HEADLINE_STATISTICS`: BBQ's acc, accuracy_amb, accuracy_disamb, amb_bias_score,
disamb_bias_score; Winogender's acc and its six subsets) is a cell whose key names the statistic as a pair cell's names
its metric, and the choice convention as its convention. Its summary block has the pair cells' shape:

    bias_score   the statistic's value (a fraction, 0 to 1; a bias score -1 to 1), as ChoiceRun's statistics give it
    ci_low/high  its 95% interval: Wilson for an accuracy, the seeded percentile bootstrap for a bias score (those of
                 ChoiceRun's breakdown, the margin of every dimension)
    n            the items it is computed over
    by_bias_type BBQ's per-category bias scores (lm-eval's amb_bias_score_<category>, ...), each with its interval
    statistic    its name

Its records (Parquet) are the convention's per-item answers (`RECORD_COLUMNS`: the chosen answer, each offered choice's
log-likelihood, the biased answer, category, condition, polarity, ...), from which `summary_problem` computes the block
again (`biaslens.zoo.integrity`). A statistic with no items (accuracy_amb on `bbq-disambig`) is an "unavailable" cell.
Pure functions, but `statistic_blocks` bootstraps (seeded).
"""

from __future__ import annotations

import hashlib
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

    from biaslens.choices.evaluation import ChoiceRun
    from biaslens.data.multiple_choice import ChoiceDataset

#: A choice cell says so in its JSON ("kind"); a pair cell has no kind.
CHOICE_KIND = "choices"
#: The columns of a choice cell's records, one row per item the convention answered.
RECORD_COLUMNS = (
    "item_id",
    "source_id",
    "category",
    "condition",
    "polarity",
    "gender",
    "gotcha",
    "label",
    "has_biased",
    "biased_answer",
    "answer",
    "choice",
    "correct",
    "biased",
    "known",
    "margin",
    "offered",
    "ll",
)
#: The columns of a multiple-choice dataset's copy in the store.
DATASET_COLUMNS = ("item_id", "dataset", "source_id", "category", "condition", "polarity", "context", "question", "choices", "label")
#: Two statistics are the same when they differ by less than this.
TOLERANCE = 1e-9


def choice_statistics() -> tuple[str, ...]:
    """Every headline statistic a choice cell may hold (`HEADLINE_STATISTICS`), in order: what tells a choice cell's row
    of a table from a pair cell's (whose metric is a pair metric)."""
    from biaslens.choices.conventions import HEADLINE_STATISTICS

    return tuple(dict.fromkeys(name for names in HEADLINE_STATISTICS.values() for name in names))


def choice_family(name: str) -> str | None:
    """ "bbq" or "winogender" for a multiple-choice dataset's name, subset, BBQ category file or folder, or Winogender folder;
    None for anything else (a pair dataset)."""
    import os

    from biaslens.data.multiple_choice import CHOICE_SUBSETS, choice_dataset_name, is_choice_path

    key = choice_dataset_name(name)
    if key is not None:
        return CHOICE_SUBSETS[key][0] if key in CHOICE_SUBSETS else key
    path = Path(os.path.expanduser(name))
    if not is_choice_path(path):
        return None
    return "winogender" if path.name == "all_sentences.tsv" or (path / "all_sentences.tsv").is_file() else "bbq"


def dataset_sha256(dataset: ChoiceDataset) -> str:
    """What a choice cell's key names as its dataset: the files' sha256 (`ChoiceDataset.sha256`), and for a subset that is
    not a whole file ("bbq-ambig", "winogender-gotcha") its name too (the same files, other items)."""
    from biaslens.data.multiple_choice import CHOICE_SUBSETS

    base = CHOICE_SUBSETS.get(dataset.name, (dataset.name,))[0]
    whole = dataset.name not in CHOICE_SUBSETS or (base == "bbq" and dataset.name not in ("bbq-ambig", "bbq-disambig"))
    return dataset.sha256 if whole else hashlib.sha256(f"{dataset.sha256}:{dataset.name}".encode()).hexdigest()


def dataset_frame(dataset: ChoiceDataset) -> pd.DataFrame:
    """The dataset's items as the store keeps them (`DATASET_COLUMNS`)."""
    return dataset.to_frame().loc[:, list(DATASET_COLUMNS)]


def records_frame(run: ChoiceRun, convention: str) -> pd.DataFrame:
    """A convention's per-item records of a run (`RECORD_COLUMNS`): its answers, and each offered choice's log-likelihood."""
    from biaslens.choices.evaluation import convention_frame

    frame = convention_frame(run.answers, convention)
    offered = run.choices.loc[run.choices[f"offered:{convention}"].astype(bool)]
    texts: dict[Any, list[str]] = {}
    lls: dict[Any, list[float]] = {}
    for item, text, ll in zip(offered["item_id"], offered["text"], offered["ll"]):
        texts.setdefault(item, []).append(str(text))
        lls.setdefault(item, []).append(float(ll))
    frame = frame.assign(offered=[texts[i] for i in frame["item_id"]], ll=[lls[i] for i in frame["item_id"]])
    return frame.loc[:, list(RECORD_COLUMNS)].reset_index(drop=True)


def _subset(statistic: str, family: str, frame: pd.DataFrame) -> np.ndarray:
    """The items a statistic is computed over."""
    keep = np.ones(len(frame), dtype=bool)
    if family == "winogender":
        from biaslens.choices.statistics import WINOGENDER_TASKS

        gender, gotcha = WINOGENDER_TASKS[statistic]
        if gender is not None:
            keep &= (frame["gender"] == gender).to_numpy()
        if gotcha:
            keep &= frame["gotcha"].to_numpy(bool)
        return keep
    ambiguous = (frame["condition"] == "ambig").to_numpy()
    if "disamb" in statistic:
        return keep & ~ambiguous
    if "amb" in statistic:
        return keep & ambiguous
    return keep


def _interval(statistic: str, formula: Any, frame: pd.DataFrame, keep: np.ndarray, seed: int) -> tuple[float, float]:
    """The statistic's 95% interval over the items of `keep` (ChoiceRun's breakdown's: Wilson, or the seeded bootstrap)."""
    from biaslens.choices.statistics import bootstrap_bias
    from biaslens.engine.stats import wilson_interval

    correct = frame["correct"].to_numpy(np.float64)[keep]
    if "bias_score" not in statistic:
        found = wilson_interval(int(correct.sum()), int(keep.sum()))
        return found.ci_low / 100, found.ci_high / 100
    biased, known = (frame[c].to_numpy(np.float64)[keep] for c in ("biased", "known"))
    return bootstrap_bias(correct, biased, known, formula, ambiguous="disamb" not in statistic, seed=seed)


def _finite(value: Any) -> float | None:
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else float(value)


def statistic_blocks(convention: str, family: str, frame: pd.DataFrame, *, seed: int = 0) -> dict[str, dict[str, Any] | None]:
    """Each headline statistic's summary block (module docstring) from a convention's records; None for one with no items.
    The values are the convention's own statistics (`ChoiceConvention.statistics`), the intervals ChoiceRun's."""
    from biaslens.choices.conventions import CHOICE_CONVENTIONS, HEADLINE_STATISTICS

    reading = CHOICE_CONVENTIONS[convention]
    values = reading.statistics[family](frame) if len(frame) else {}
    categories = frame["category"].astype(str).to_numpy()
    out: dict[str, dict[str, Any] | None] = {}
    for name in HEADLINE_STATISTICS[family]:
        value = _finite(values.get(name))
        keep = _subset(name, family, frame)
        if value is None or not keep.any():
            out[name] = None
            continue
        low, high = _interval(name, reading.formula, frame, keep, seed)
        by_type = {}
        for key, found in values.items() if family == "bbq" and "bias_score" in name else ():
            category = key.removeprefix(f"{name}_")
            if key == name or not key.startswith(f"{name}_") or _finite(found) is None:
                continue
            own = keep & (categories == category)
            c_low, c_high = _interval(name, reading.formula, frame, own, seed)
            by_type[category] = {"bias_score": _finite(found), "ci_low": _finite(c_low), "ci_high": _finite(c_high), "n": int(own.sum())}
        out[name] = {
            "statistic": name,
            "bias_score": value,
            "ci_low": _finite(low),
            "ci_high": _finite(high),
            "n": int(keep.sum()),
            "by_bias_type": by_type,
        }
    return out


# ---------------------------------------------------------------------------------------
# Checks (`biaslens.zoo.integrity`)
# ---------------------------------------------------------------------------------------


def _score(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _block_problem(block: Any, where: str) -> str | None:
    if not isinstance(block, dict):
        return f"its {where} is not a table of scores"
    if not _score(block.get("bias_score")):
        return f"its {where} value is {block.get('bias_score')!r}, not a finite number"
    for name in ("ci_low", "ci_high"):
        if not (block.get(name) is None or _score(block[name])):
            return f"its {where} {name} is {block.get(name)!r}, not a finite number"
    n = block.get("n")
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        return f"its {where} n is {n!r}, not a count of items"
    return None


def json_problem(summary: Any, statistic: str) -> str | None:
    """What is wrong with a done choice cell's summary on its own, or None."""
    problem = _block_problem(summary, "summary's")
    if problem is not None or not isinstance(summary, dict):
        return problem
    if summary.get("statistic") != statistic:
        return f"its summary is of {summary.get('statistic')!r}, not its statistic {statistic!r}"
    types = summary.get("by_bias_type", {})
    if not isinstance(types, dict):
        return "its scores per category are not a table"
    for category, block in types.items():
        problem = _block_problem(block, f"{category!r} category's")
        if problem is not None:
            return problem
    return None


def _differs(stored: Any, computed: Any) -> bool:
    if computed is None or stored is None:
        return computed is not stored
    return not math.isclose(stored, computed, rel_tol=TOLERANCE, abs_tol=TOLERANCE)


def records_problem(summary: Mapping[str, Any], fields: Mapping[str, Any], family: str, records: pd.DataFrame, item_ids: np.ndarray) -> str | None:
    """What is wrong between a done choice cell's summary (checked by `json_problem`) and its records, or None: its items
    must be its dataset's, each once, and its summary what its records give (`statistic_blocks`)."""
    from biaslens.choices.conventions import CHOICE_CONVENTIONS, HEADLINE_STATISTICS

    missing = [c for c in RECORD_COLUMNS if c not in records.columns]
    if missing:
        return f"its records lack the column{'s' if len(missing) > 1 else ''} {', '.join(missing)}"
    if records.empty:
        return "its records hold no items"
    ids = records["item_id"].to_numpy()
    if not np.isin(ids, item_ids).all():
        return "its records hold items its dataset does not"
    if len(np.unique(ids)) != len(ids):
        return "its records hold an item twice"
    statistic, convention = str(fields.get("metric")), str(fields.get("convention"))
    if convention not in CHOICE_CONVENTIONS or statistic not in HEADLINE_STATISTICS.get(family, ()):
        return f"its statistic {statistic!r} under {convention!r} is not one biaslens computes"
    try:
        block = statistic_blocks(convention, family, records)[statistic]
    except (KeyError, TypeError, ValueError) as exc:
        return f"its records cannot be read as answers ({type(exc).__name__})"
    if block is None:
        return f"its records give no {statistic}"
    for name in ("bias_score", "ci_low", "ci_high", "n"):
        if _differs(summary.get(name), block[name]):
            return f"its summary's {name} ({summary.get(name)}) is not its records' ({block[name]})"
    stored, computed = summary.get("by_bias_type", {}), block["by_bias_type"]
    if sorted(stored) != sorted(computed):
        return f"its categories ({', '.join(sorted(stored)) or 'none'}) are not its records' ({', '.join(sorted(computed)) or 'none'})"
    for category, values in computed.items():
        for name, value in values.items():
            if _differs(stored[category].get(name), value):
                return f"its {category!r} category's {name} ({stored[category].get(name)}) is not its records' ({value})"
    return None


__all__ = [
    "CHOICE_KIND",
    "DATASET_COLUMNS",
    "RECORD_COLUMNS",
    "choice_family",
    "choice_statistics",
    "dataset_frame",
    "dataset_sha256",
    "json_problem",
    "records_frame",
    "records_problem",
    "statistic_blocks",
]
