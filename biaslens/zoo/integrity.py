"""What a cell of a results store must be to be read: a checked cell, or the one line that says why it is not.

A cell is read only when it is whole and says what its records say: its JSON an object with every field of the right type
(`json_problem`), every score finite, and its summary (the bias score with its counts and interval, the token accuracy,
each bias type's) what its per-pair records give (`records_problem`), pair by pair as `evaluate` computed it; a
multiple-choice cell (`"kind": "choices"`) its statistic with its interval and per-category scores what its per-item
answers give (`biaslens.zoo.choicecells`). A cell
that is not (cut off, garbage, edited by hand, another cell's summary copied in, `"n": 2.5`, an infinite score) is
*damaged*: the store's readers leave it out of every table and name it (`ResultsStore.damaged_lines`), and `zoo run`
moves its files to the store's `damaged/` folder and scores it again.

Pure functions of values the store has read (`biaslens.zoo.store` reads the files); each returns None for a sound cell,
else what is wrong, in a few words. The store checks a cell once per version of its files (`ResultsStore` keeps the
verdicts in its index), so reading a store of thousands of cells stays cheap.
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import numpy as np

#: The statuses a cell is written with: scored, or a metric the model cannot give (with the reason).
STATUSES = ("done", "unavailable")
#: A sanity verdict's statuses (`biaslens.analyses.sanity`); "" = not checked.
SANITY_STATUSES = ("ok", "weak", "untrained", "")
#: The numbers of a summary (and of each bias type's block), with what each must be.
SCORES = ("bias_score", "ci_low", "ci_high")
COUNTS = ("n", "wins", "ties", "undecidable")
#: Two floats are the same score when they differ by less than this (the summary was computed from the same records).
TOLERANCE = 1e-9


def _shown(value: Any) -> str:
    """A value as a message shows it: short, on one line."""
    text = repr(value).replace("\n", " ")
    return text if len(text) <= 24 else text[:23] + "…"


def _is_text(value: Any) -> bool:
    return isinstance(value, str)


def _is_score(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _block_problem(block: Any, where: str, counts: tuple[str, ...] = COUNTS) -> str | None:
    if not isinstance(block, dict):
        return f"its {where} is {_shown(block)}, not a table of scores"
    for name in SCORES:
        if not _is_score(block.get(name)):
            return f"its {where} {name} is {_shown(block.get(name))}, not a finite number"
    for name in counts:
        if not _is_count(block.get(name)):
            return f"its {where} {name} is {_shown(block.get(name))}, not a count"
    if block["n"] < 1:
        return f"its {where} n is 0"
    if not block["ci_low"] <= block["bias_score"] <= block["ci_high"]:
        return f"its {where} bias score {block['bias_score']} is outside its interval [{block['ci_low']}, {block['ci_high']}]"
    return None


def json_problem(cell: Any) -> str | None:
    """What is wrong with a cell's JSON on its own (types, finiteness), or None; its key and records are checked apart."""
    if not isinstance(cell, dict):
        return f"it is {_shown(cell)}, not a cell (a JSON object)"
    fields = cell.get("fields")
    if not isinstance(fields, dict):
        return "it has no key facts (fields)"
    for name in ("model_fingerprint", "dataset_sha256", "metric", "convention", "precision", "compat", "biaslens"):
        if not _is_text(fields.get(name)):
            return f"its {name} is {_shown(fields.get(name))}, not text"
    if not (fields.get("model_revision") is None or _is_text(fields["model_revision"])):
        return f"its model_revision is {_shown(fields['model_revision'])}, not text"
    if not (fields.get("selection") is None or isinstance(fields["selection"], dict)):
        return f"its selection is {_shown(fields['selection'])}, not a table"
    status = cell.get("status", "done")
    if status not in STATUSES:
        return f"its status is {_shown(status)}, not one of {', '.join(STATUSES)}"
    model, dataset, run = cell.get("model"), cell.get("dataset"), cell.get("run")
    if not isinstance(model, dict) or not _is_text(model.get("label")):
        return "it does not say which model it is (model.label)"
    for name in ("id", "family", "kind"):
        if not (model.get(name) is None or _is_text(model[name])):
            return f"its model's {name} is {_shown(model[name])}, not text"
    parameters = model.get("parameters")
    if not (parameters is None or (_is_score(parameters) and parameters >= 0)):
        return f"its model's parameters is {_shown(parameters)}, not a count"
    sanity = model.get("sanity")
    if sanity is not None and not (isinstance(sanity, dict) and sanity.get("status") in SANITY_STATUSES and _is_text(sanity.get("message", ""))):
        return f"its model's sanity verdict is {_shown(sanity)}, not a verdict"
    if not isinstance(dataset, dict) or not _is_text(dataset.get("label")) or not (dataset.get("name") is None or _is_text(dataset["name"])):
        return "it does not say which dataset it is (dataset.label)"
    if not (run is None or (isinstance(run, dict) and all(run.get(k) is None or _is_text(run[k]) for k in ("created", "run_id")))):
        return f"its run is {_shown(run)}, not a run's record"
    if status == "unavailable":
        return None if _is_text(cell.get("reason", "")) else f"its reason is {_shown(cell.get('reason'))}, not text"
    if cell.get("kind") is not None:
        from biaslens.zoo import choicecells

        if cell["kind"] != choicecells.CHOICE_KIND or dataset.get("family") not in ("bbq", "winogender"):
            return f"its kind is {_shown(cell['kind'])} of {_shown(dataset.get('family'))}, not a multiple-choice cell"
        return choicecells.json_problem(cell.get("summary"), str(fields["metric"]))
    summary = cell.get("summary")
    problem = _block_problem(summary, "summary's" if isinstance(summary, dict) else "summary")
    if problem is not None or not isinstance(summary, dict):
        return problem
    accuracy = summary.get("token_accuracy")
    if not (accuracy is None or _is_score(accuracy)):
        return f"its summary's token_accuracy is {_shown(accuracy)}, not a finite number"
    types = summary.get("by_bias_type", {})
    if not isinstance(types, dict):
        return f"its scores per bias type are {_shown(types)}, not a table"
    for bias_type, block in types.items():
        problem = _block_problem(block, f"{bias_type!r} bias type's", ("n",))
        if problem is not None:
            return problem
    return None


def _differs(stored: Any, computed: float) -> bool:
    if isinstance(computed, float) and math.isnan(computed):
        return stored is not None
    return stored is None or not math.isclose(stored, computed, rel_tol=TOLERANCE, abs_tol=TOLERANCE)


def _against(block: Mapping[str, Any], stereo: np.ndarray, anti: np.ndarray, where: str, counts: tuple[str, ...]) -> str | None:
    """`block`'s counts and interval against those of the pairs' scores."""
    from biaslens.engine.stats import bias_score

    got = bias_score(stereo, anti)
    computed = {"n": got.n, "wins": got.wins, "ties": got.ties, "undecidable": got.undecidable}
    for name in counts:
        if block.get(name) != computed[name]:
            return f"its {where}{name} ({block.get(name)}) is not its records' ({computed[name]})"
    for name, value in (("bias_score", got.score), ("ci_low", got.ci_low), ("ci_high", got.ci_high)):
        if _differs(block.get(name), value):
            return f"its {where}{name} ({block.get(name)}) is not its records' ({value:.6g})"
    return None


def records_problem(
    summary: Mapping[str, Any],
    positions: np.ndarray,
    stereo: np.ndarray,
    anti: np.ndarray,
    hits: np.ndarray,
    total: np.ndarray,
    type_codes: np.ndarray,
    type_names: Sequence[str],
) -> str | None:
    """What is wrong between a done cell's summary (checked by `json_problem`) and its records, or None.

    The records are its per-pair columns, `positions` each record's pair's position in the store's copy of its dataset
    (-1: a pair the dataset does not hold); `type_codes` the dataset's pairs' bias types, as positions in `type_names`
    ("" for a pair of none)."""
    if len(positions) == 0:
        return "its records hold no pairs"
    if (positions < 0).any():
        return "its records hold pairs its dataset does not"
    if np.bincount(positions).max() > 1:
        return "its records hold a pair twice"
    problem = _against(summary, stereo, anti, "summary's ", COUNTS)
    if problem is not None:
        return problem
    total_hits, total_tokens = int(np.nansum(hits)), int(np.nansum(total))
    accuracy = 100.0 * total_hits / total_tokens if total_tokens else math.nan
    if _differs(summary.get("token_accuracy"), accuracy):
        return f"its summary's token_accuracy ({summary.get('token_accuracy')}) is not its records' ({accuracy:.6g})"
    by_type = summary.get("by_bias_type", {})
    record_codes = type_codes[positions]
    codes = {type_names[int(c)]: int(c) for c in np.flatnonzero(np.bincount(record_codes, minlength=len(type_names))) if type_names[int(c)]}
    if sorted(by_type) != sorted(codes):
        return f"its bias types ({', '.join(sorted(by_type)) or 'none'}) are not its records' ({', '.join(sorted(codes)) or 'none'})"
    for bias_type, code in codes.items():
        mask = record_codes == code
        problem = _against(by_type[bias_type], stereo[mask], anti[mask], f"{bias_type!r} bias type's ", ("n",))
        if problem is not None:
            return problem
    return None


__all__ = ["COUNTS", "SANITY_STATUSES", "SCORES", "STATUSES", "TOLERANCE", "json_problem", "records_problem"]
