"""How numbers and column names are written for people: margins whose sign agrees with their verdict, table headers.

One place for both, read by the app's tables, the figures, the slides and the CLI:

* `format_margin` writes a margin f(stereo) − f(anti) with as many decimals as it takes for the
  sign to show (at least 4): -3e-6 is "-0.000003", never "-0.0000" beside the verdict
  "anti-stereotypical"; `margin_decimals` is the same rule for a whole column.
* `column_label` names an engine frame's column for a table header: `bias_type` is "Bias type",
  `ci_low` "95% CI low", `aul_margin` "AUL margin" (metric names from the registry).
"""

from __future__ import annotations

import re

import math
from typing import Any, Callable, Iterable, Mapping, Sequence

from biaslens.engine.metrics import METRICS

#: Decimals a margin shows at least, and at most before it switches to scientific notation.
MARGIN_DECIMALS = 4
MAX_MARGIN_DECIMALS = 12


def _decimals(value: float) -> int | None:
    """The fewest decimals (>= MARGIN_DECIMALS) at which `value` does not round to zero; None beyond MAX_MARGIN_DECIMALS."""
    if value == 0 or not math.isfinite(value):
        return MARGIN_DECIMALS
    for decimals in range(MARGIN_DECIMALS, MAX_MARGIN_DECIMALS + 1):
        if float(f"{abs(value):.{decimals}f}") != 0:
            return decimals
    return None


def margin_decimals(values: Iterable[float]) -> int | None:
    """Decimals that show every value's sign (the most any value needs); None: some value needs scientific notation."""
    needed = [_decimals(float(v)) for v in values if v is not None and not math.isnan(float(v))]
    if any(d is None for d in needed):
        return None
    return max([MARGIN_DECIMALS, *(d for d in needed if d is not None)])


def format_margin(value: float | None, *, signed: bool = True) -> str:
    """A margin with a sign that agrees with its verdict: "+0.1234", "-0.000003", "-3.0e-15"; "0.0000" only for an exact
    tie; "—" when undefined. `signed=False` writes its size ("0.000003"), for a sentence that names the direction."""
    if value is None or math.isnan(value):
        return "—"
    if value == 0:
        return f"{0:.{MARGIN_DECIMALS}f}"
    shown = value if signed else abs(value)
    sign = "+" if signed else ""
    if math.isinf(value):
        return f"{shown:{sign}}"
    decimals = _decimals(value)
    return f"{shown:{sign}.1e}" if decimals is None else f"{shown:{sign}.{decimals}f}"


def margin_printf(values: Iterable[float]) -> str:
    """`format_margin`'s rule for a whole column, as a printf format (an interactive table formats a column at once)."""
    decimals = margin_decimals(values)
    return "%+.1e" if decimals is None else f"%+.{decimals}f"


def margin_formatter(values: Iterable[float]) -> Callable[[float | None], str]:
    """`format_margin`'s rule for margins shown together (a table's margin columns): one number of decimals for all,
    enough for every value's sign ("+0.120000" beside "-0.000006", never 5 decimals beside 6); scientific notation for
    all when one needs it; "—" when undefined; an exact tie unsigned. Same as `margin_printf`."""
    decimals = margin_decimals(values)

    def write(value: float | None) -> str:
        if value is None or math.isnan(value):
            return "—"
        if value == 0:
            return f"{0:.{MARGIN_DECIMALS if decimals is None else decimals}f}"
        return f"{value:+.1e}" if decimals is None else f"{value:+.{decimals}f}"

    return write


def format_share(value: float, decimals: int) -> str:
    """A share of a margin (a token's bar in "what drives the difference") at `decimals`, or with as many more as it takes
    to stay non-zero ("+0.000006", never "+0.0000" beside "−0.000006"); "0" when it is exactly 0."""
    if value == 0:
        return "0"
    if not math.isfinite(value) or float(f"{abs(value):.{decimals}f}") != 0:
        return f"{value:+.{decimals}f}"
    needed = -math.floor(math.log10(abs(value)))  # its first significant digit: -6e-6 is "-0.000006", not "-0.00001"
    return f"{value:+.1e}" if needed > MAX_MARGIN_DECIMALS else f"{value:+.{needed}f}"


#: A column format meaning "a margin": `format_margin` per cell, or `margin_printf` for a whole column.
MARGIN = "margin"
#: Columns that hold p-values: 3 significant digits (a tiny p stays readable, 1.9e-05).
P_VALUE_COLUMNS = ("p", "p_value", "p_two_sided", "mcnemar_p")


def value_format(name: str) -> str | None:
    """How a column's numbers are written by default: `MARGIN` for margins, "{:.3g}" for p-values, else None (the table's own)."""
    if name == "margin" or name.endswith("_margin") or name.startswith("margin ("):
        return MARGIN
    return "{:.3g}" if name in P_VALUE_COLUMNS else None


def column_formats(frame: Any, columns: Sequence[str], formats: Mapping[str, str] | None = None, *, decimals: int = 2) -> dict[str, str]:
    """How each of a table's `columns` of `frame` is written: the caller's format, else `value_format`'s, else
    `decimals` places for a float column; a column with none (text, integers) is left out."""
    out: dict[str, str] = {}
    for c in columns:
        fmt = (formats or {}).get(c) or value_format(str(c))
        if fmt is None and frame[c].dtype.kind == "f":
            fmt = f"{{:.{decimals}f}}"
        if fmt is not None:
            out[c] = fmt
    return out


#: Headers for the columns engine frames share (`pairs.csv`, summaries, the report's tables, comparisons, sweeps).
COLUMN_LABELS = {
    "pair_id": "Pair",
    "bias_type": "Bias type",
    "direction": "Direction",
    "sent_stereo": "Stereotypical sentence",
    "sent_anti": "Anti-stereotypical sentence",
    "model": "Model",
    "models": "Models",
    "dataset": "Dataset",
    "metric": "Metric",
    "name": "Metric",
    "source": "Source",
    "group": "Group",
    "group_name": "Group",
    "condition": "Condition",
    "column": "Column",
    "n": "N",
    "wins": "Wins",
    "ties": "Ties",
    "undecidable": "Undecidable",
    "bias_score": "Bias score",
    "ci_low": "95% CI low",
    "ci_high": "95% CI high",
    "token_accuracy": "Token accuracy (%)",
    "accuracy": "Accuracy (%)",
    "drop": "Drop (points)",
    "tokens": "Tokens",
    "positions": "Positions",
    "unit": "Unit",
    "hits": "Hits",
    "total": "Total",
    "seed": "Seed",
    "margin": "Margin (stereo − anti)",
    "verdict": "Prefers",
    "prefers": "Prefers",
    "difference": "Difference",
    "p": "p",
    "p_value": "p",
    "mcnemar_b": "McNemar b",
    "mcnemar_c": "McNemar c",
    "mcnemar_p": "McNemar p",
    "mcnemar_method": "Test",
    "method": "Test",
    "auc": "AUC",
    "positives": "Positives",
    "negatives": "Negatives",
    "test": "Test",
    "auc_ci_low": "AUC 95% CI low",
    "auc_ci_high": "AUC 95% CI high",
    "association": "Association",
    "frequency_ratio": "Frequency ratio",
    "corpus_association": "Association in the corpus",
    "corpus_frequency_ratio": "Frequency ratio in the corpus",
    "group_a_preference": "Prefers group A",
    "trained_here": "Trained here",
    "expected": "Planted truth",
    "mean": "Mean",
    "sd": "sd",
    "min": "Lowest",
    "max": "Highest",
    "alarms": "Alarms",
    "alarm_rate": "Alarm rate",
    "models_n": "Models",
    "lms": "LMS",
    "ss": "SS",
    "icat": "ICAT",
    "targets": "Targets",
    "label": "Check",
    "pairs": "Pairs",
    "count_adv": "Count Adv",
    "count_dis": "Count Dis",
    "word": "Word",
    "reason": "Reason",
}

#: A verdict ("stereo", "anti", "tie", "undecidable": `PairInspection.verdict`, `explore.verdicts`) in words.
VERDICTS = {"stereo": "stereotypical", "anti": "anti-stereotypical", "tie": "tie", "undecidable": "undecidable"}

#: One pair's sentence scores (`PairInspection.summary_frame`), in the inspector and in a notebook: the key results
#: first (metric, margin, verdict), their headers and formats.
SCORE_KEY = ("metric", "margin", "verdict")
SCORE_LABELS = {
    "metric": "Metric",
    "margin": "Margin (stereo − anti)",
    "verdict": "Prefers",
    "stereo": "Stereotypical",
    "anti": "Anti-stereotypical",
    "accuracy_stereo": "Token acc. stereo (%)",
    "accuracy_anti": "Token acc. anti (%)",
}
SCORE_FORMATS = {"stereo": "{:.4f}", "anti": "{:.4f}", "accuracy_stereo": "{:.0f}", "accuracy_anti": "{:.0f}"}

#: Per-model columns of a comparison: "<what> (<model>)".
PER_MODEL = {"margin (": "Margin (", "verdict (": "Prefers (", "n (": "N ("}

#: `<metric key>_<part>` columns (`pairs.csv`, `explore.with_verdicts`): the part's words after the metric's name.
METRIC_PARTS = {
    "stereo": "stereo",
    "anti": "anti",
    "margin": "margin",
    "verdict": "prefers",
    "hits": "hits",
    "total": "tokens scored",
    "logprob": "log p",
}


def column_label(name: str) -> str:
    """A column's header for people: the shared names above, `<metric>_<part>` as "AUL margin" (and `aul+aul_c_margin`,
    a metric and its counterpart, as "AUL / AUL-c margin"), an identifier with spaces for its underscores and a capital
    first letter ("count_unknown" is "Count unknown"); any other name (a model's, "AUL (CP)", a header already written
    for people) stays as it is."""
    if name in COLUMN_LABELS:
        return COLUMN_LABELS[name]
    for prefix, label in PER_MODEL.items():  # `explore.compare_models`: "margin (roberta)" is "Margin (roberta)"
        if name.startswith(prefix):
            return label + name[len(prefix) :]
    key, _, part = name.rpartition("_")
    if key in METRICS and part in METRIC_PARTS:
        return f"{METRICS[key].name} {METRIC_PARTS[part]}"
    if part in METRIC_PARTS and all(k in METRICS for k in key.split("+")):  # a metric and its counterpart: "AUL / AUL-c margin"
        return f"{' / '.join(METRICS[k].name for k in key.split('+'))} {METRIC_PARTS[part]}"
    if "_" in name and name == name.lower() and " " not in name:
        text = re.sub(r"\bci (low|high)\b", r"95% CI \1", name.replace("_", " "))  # "control_ci_low": "Control 95% CI low"
        return text[0].upper() + text[1:]
    return name


__all__ = [
    "COLUMN_LABELS",
    "MARGIN",
    "MARGIN_DECIMALS",
    "P_VALUE_COLUMNS",
    "SCORE_FORMATS",
    "SCORE_KEY",
    "SCORE_LABELS",
    "VERDICTS",
    "column_formats",
    "column_label",
    "format_margin",
    "format_share",
    "margin_decimals",
    "margin_formatter",
    "margin_printf",
    "value_format",
]
