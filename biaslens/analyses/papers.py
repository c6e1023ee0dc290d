"""Kaneko & Bollegala (2022), Tables 1, 3 and 5: token prediction accuracy, Adv/Dis groups, bias scores.

* `token_ranks` runs a dataset once for per-token outcomes: the rank of the gold token at
  every position of the unmasked pass (AUL) and at the positions a masked metric reads
  (CPS: the unmodified tokens, SSS: the modified tokens), one row per token occurrence.
  Runs go in resumable chunks through the `ResultCache` (`cached_pair_records`), so a
  second run, or the report after the app, reads them back instead of computing.
* `compare_accuracy` turns such a run into Table 1: each metric's token prediction
  accuracy (under both position definitions, "default" and "kaneko2022") and McNemar's
  test between the masked metric and AUL on the token occurrences both score.
* `accuracy_table`, `group_table` and `bias_score_table` lay several models' results out
  as the paper's Tables 1, 3 and 5, with the published numbers (`biaslens.data.published`) as
  reference rows whose `source` says where they come from.

Every table is long ("tidy"): one row per model, source, dataset and metric, so figures
and pivots are built from the same frame; `paper_layout` gives the paper's wide layout.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence, Unpack

import numpy as np
import pandas as pd

from biaslens.engine.cache import ResultCache, cache_key
from biaslens.data.datasets import Pair, PairDataset
from biaslens.errors import InputError
from biaslens.engine.evaluation import EvaluationResult, select_pairs
from biaslens.engine.pairs import score_encoded_pairs
from biaslens.engine.metrics import METRICS, sss_instance_accuracy
from biaslens.engine.models import LanguageModel
from biaslens.engine.options import SELECTION, RunKeywords, run_keywords
from biaslens.engine.runner import Progress, run_chunked
from biaslens.data.published import BIAS_SCORES, GROUP_SCORES, TOKEN_ACCURACY
from biaslens.engine.stats import McNemarResult, mcnemar, wilson_interval

#: `source` of rows computed here, and of rows copied from the paper.
SOURCE_RUN = "this run"
SOURCE_PAPER = "Kaneko & Bollegala (2022)"
PUBLISHED_TAG = "published"

#: The masked metric Table 1 compares with AUL on each dataset, and the tokens both score.
MASKED_METRIC = {"crows-pairs": "cps", "stereoset": "sss"}
#: The masked metrics Table 1 can compare with AUL, and the tokens both score (`Metric.paired_tokens`).
PAIRED_TOKENS = {key: m.paired_tokens for key, m in METRICS.items() if m.paired_tokens}

#: Token-accuracy position definitions (spec, "Token prediction accuracy").
POSITIONS = {
    "default": "non-special tokens (the papers' equations)",
    "kaneko2022": "every position, special tokens included (the released code)",
}

DATASET_LABELS = {"crows-pairs": "CP", "stereoset": "SS"}

#: Bumped whenever a cached per-token record would change meaning.
_TOKEN_RECORD = "token-ranks/1"

_RECORD = "record"  # the runner's one part per pair
#: compute(lm, pairs, progress(rows_done, rows_total)) -> one JSON-able record per pair.
RecordFn = Callable[[LanguageModel, Sequence[Pair], Callable[[int, int], None]], list[dict[str, Any]]]


# ---------------------------------------------------------------------------------------
# Resumable per-pair records
# ---------------------------------------------------------------------------------------


def cached_pair_records(
    lm: LanguageModel,
    pairs: Sequence[Pair],
    tag: str,
    compute: RecordFn,
    *,
    cache: ResultCache | None = None,
    chunk_pairs: int | None = None,
    progress: Progress | None = None,
) -> tuple[list[dict[str, Any]], int]:
    """One record per pair, read from the cache where present, else computed chunk by chunk and cached.

    A record's key is (model fingerprint, dtype, `tag`, the pair's sentences), so `tag`
    must name everything else the record depends on (e.g. a seed). Returns the records in
    the order of `pairs` and how many came from the cache. `progress(done_pairs, total)`.
    The chunked, cached, resumable loop is `biaslens.engine.runner.run_chunked` (one part per pair).
    """

    def key(p: Pair, _part: str) -> str:
        return cache_key(lm.fingerprint, str(lm.dtype), tag, p.sent_stereo, p.sent_anti, p.unrelated)

    def records(chunk: Sequence[Pair], _parts: Sequence[str], within: Callable[[int, int], None]) -> list[dict[str, dict[str, Any]]]:
        return [{_RECORD: record} for record in compute(lm, chunk, within)]

    run = run_chunked(pairs, parts=(_RECORD,), key=key, compute=records, cache=cache, chunk_pairs=chunk_pairs, progress=progress)
    return [r[_RECORD] for r in run.records], run.cached


def encode_sentence(lm: LanguageModel, pair: Pair, field_name: str):
    """`lm.encode` of one sentence of a pair; a failure names the pair and the field."""
    try:
        return lm.encode(getattr(pair, field_name))
    except InputError as exc:
        raise InputError(f"Pair {pair.pair_id} ({field_name}): {exc}") from exc


def dataset_pairs(dataset: PairDataset | Sequence[Pair], *, limit: int | None = None, sample: int | None = None, seed: int = 0) -> list[Pair]:
    """The pairs a run scores: all, the first `limit`, or a seeded `sample` (as `evaluate` selects them)."""
    pairs = list(dataset.pairs if isinstance(dataset, PairDataset) else dataset)
    pairs = select_pairs(pairs, limit=limit, sample=sample, seed=seed)
    if not pairs:
        raise InputError("No pairs to score.")
    return pairs


# ---------------------------------------------------------------------------------------
# Per-token outcomes (the data behind Table 1)
# ---------------------------------------------------------------------------------------

TOKEN_COLUMNS = (
    "pair_id",
    "bias_type",
    "direction",
    "sentence",
    "position",
    "token_id",
    "special",
    "masked",
    "unmasked_rank",
    "masked_rank",
)


@dataclass
class TokenRun:
    """Per-token outcomes of one model on a dataset: the data behind Table 1.

    `tokens` has one row per token occurrence (both sentences of every pair, special
    tokens included): `sentence` ("stereo"/"anti"), `position`, `token_id`, `special`,
    `unmasked_rank` (rank of the gold token in the unmasked pass, 1 = arg-max),
    `masked` (whether `masked_metric` reads the position) and `masked_rank` (its rank
    there; NaN where not masked).
    """

    model: str
    dataset: str
    masked_metric: str  # "cps" or "sss"
    tokens: pd.DataFrame
    cached: int = 0  # pairs read from the result cache


def _token_records(masked_metric: str, batch_tokens: int | None) -> RecordFn:
    def compute(lm: LanguageModel, pairs: Sequence[Pair], progress: Callable[[int, int], None]) -> list[dict[str, Any]]:
        encoded = [(encode_sentence(lm, p, "sent_stereo"), encode_sentence(lm, p, "sent_anti")) for p in pairs]
        scored = score_encoded_pairs(lm, encoded, ["aul", masked_metric], batch_tokens=batch_tokens, progress=progress)
        records = []
        for encodings, result in zip(encoded, scored):
            record = {}
            for k, side in enumerate(("stereo", "anti")):
                masked = result.scores[masked_metric][k]
                record[side] = {
                    "ids": list(encodings[k].ids),
                    "special": [int(s) for s in encodings[k].special],
                    "rank": result.unmasked[k].rank.tolist(),
                    "masked_positions": list(masked.positions),
                    "masked_rank": masked.rank.tolist(),
                }
            records.append(record)
        return records

    return compute


def token_ranks(lm: LanguageModel, dataset: PairDataset | Sequence[Pair], masked_metric: str | None = None, **run: Unpack[RunKeywords]) -> TokenRun:
    """Per-token ranks of the unmasked pass and of a masked metric over a dataset's pairs.

    `masked_metric` defaults to the paper's choice for the dataset (CPS on CrowS-Pairs,
    SSS on StereoSet). The ranks do not depend on the compat mode. `run`: which pairs and
    how, as for `evaluate` (`RunKeywords`: limit, sample, seed, cache, batch_tokens,
    chunk_pairs, progress); resumable through `cache`.
    """
    pairs = dataset_pairs(dataset, **run_keywords("token_ranks", run, *SELECTION))
    name = pairs[0].dataset if not isinstance(dataset, PairDataset) else dataset.name
    metric = masked_metric or MASKED_METRIC.get(name, "cps")
    if metric not in PAIRED_TOKENS:
        raise InputError(f"Token accuracy compares AUL with {' or '.join(PAIRED_TOKENS)}, not {metric!r}.")
    compute = _token_records(metric, run.get("batch_tokens"))
    records, from_cache = cached_pair_records(
        lm, pairs, f"{_TOKEN_RECORD}/{metric}", compute, **run_keywords("token_ranks", run, "cache", "chunk_pairs", "progress")
    )
    return TokenRun(lm.name, name, metric, token_frame(pairs, records), from_cache)


def token_rows(columns: dict[str, list], pair: Pair, side: str, record: Mapping[str, Any]) -> int:
    """Append a sentence's tokens to the columns of a long token table (`TOKEN_COLUMNS`, the shuffle's): the pair's id,
    bias type and direction (where the table has one), the sentence, each token's position, id and special flag, from
    its `record` (`ids`, `special`); the number of tokens."""
    n = len(record["ids"])
    columns["pair_id"] += [pair.pair_id] * n
    columns["bias_type"] += [pair.bias_type] * n
    if "direction" in columns:
        columns["direction"] += [pair.direction] * n
    columns["sentence"] += [side] * n
    columns["position"] += list(range(n))
    columns["token_id"] += record["ids"]
    columns["special"] += [bool(s) for s in record["special"]]
    return n


def token_frame(pairs: Sequence[Pair], records: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """The `TokenRun.tokens` table from per-pair records (see `_token_records`)."""
    columns: dict[str, list] = {c: [] for c in TOKEN_COLUMNS}
    for pair, record in zip(pairs, records):
        for side in ("stereo", "anti"):
            r = record[side]
            n = token_rows(columns, pair, side, r)
            masked_rank = np.full(n, np.nan)
            masked_rank[list(r["masked_positions"])] = r["masked_rank"]
            columns["masked"] += list(~np.isnan(masked_rank))
            columns["unmasked_rank"] += r["rank"]
            columns["masked_rank"] += masked_rank.tolist()
    frame = pd.DataFrame(columns)
    return frame.astype({"special": bool, "masked": bool, "unmasked_rank": np.int64, "position": np.int64, "token_id": np.int64})


# ---------------------------------------------------------------------------------------
# Table 1: token prediction accuracy and McNemar's test
# ---------------------------------------------------------------------------------------


@dataclass
class AccuracyComparison:
    """Table 1 for one model and dataset: accuracy of the masked metric and AUL, and McNemar's test.

    `accuracy` has one row per (metric, positions definition): hits, total, accuracy
    (%) with its 95% Wilson interval. `mcnemar` pairs every token occurrence both
    metrics score (`paired_tokens`): first = the masked metric right, second = AUL right.
    `contingency` is the 2x2 table of those occurrences.
    """

    model: str
    dataset: str
    masked_metric: str
    accuracy: pd.DataFrame
    mcnemar: McNemarResult
    contingency: pd.DataFrame
    paired_tokens: str
    pairs: int = 0  # pairs the counts rest on

    def value(self, metric: str, positions: str = "default") -> float:
        """The accuracy (%) of `metric` ("aul" or the masked metric) under a positions definition."""
        rows = self.accuracy[(self.accuracy["metric"] == metric) & (self.accuracy["positions"] == positions)]
        return float(rows["accuracy"].iloc[0])


def _accuracy_row(metric: str, positions: str, correct: np.ndarray, unit: str = "tokens") -> dict[str, Any]:
    p = wilson_interval(int(correct.sum()), int(correct.size))
    return {
        "metric": metric,
        "positions": positions,
        "unit": unit,
        "hits": p.successes,
        "total": p.n,
        "accuracy": p.estimate,
        "ci_low": p.ci_low,
        "ci_high": p.ci_high,
    }


def sss_instances(tokens: pd.DataFrame) -> np.ndarray:
    """Per pair of a `TokenRun.tokens` table (SSS run), whether the instance is right as the paper defines it.

    `biaslens.engine.metrics.sss_instance_accuracy` on each pair's masked ranks: right when every
    masked (modified) token of the stereotype or of the anti-stereotype sentence is the
    arg-max. Pairs with no masked token on either side are left out.
    """
    masked = tokens[tokens["masked"]]
    out = []
    for _pair, rows in masked.groupby("pair_id", sort=False):
        sides = [rows.loc[rows["sentence"] == side, "masked_rank"].to_numpy() for side in ("stereo", "anti")]
        hits, total = sss_instance_accuracy(*sides)
        if total:
            out.append(bool(hits))
    return np.array(out, dtype=bool)


def compare_accuracy(run: TokenRun) -> AccuracyComparison:
    """Table 1 from a `TokenRun`: accuracies under both position definitions and McNemar's test.

    AUL counts the non-special positions of the unmasked pass ("default") or all of them
    ("kaneko2022"); CPS counts its masked positions under both; SSS counts StereoSet
    instances in the default mode (the paper: right when the predicted sub-token sequence
    equals either candidate, `sss_instances`) and its masked tokens in kaneko2022 mode (the
    released code). McNemar's test pairs each masked position with the same position of the
    unmasked pass (tokens, for SSS too).
    """
    t = run.tokens
    masked = t[t["masked"]]
    masked_right = (masked["masked_rank"] == 1).to_numpy()
    aul_right_there = (masked["unmasked_rank"] == 1).to_numpy()
    if METRICS[run.masked_metric].accuracy_unit == "instances":  # SSS: the paper's definition counts instances; the code, tokens
        default_row = _accuracy_row(run.masked_metric, "default", sss_instances(t), "instances")
    else:
        default_row = _accuracy_row(run.masked_metric, "default", masked_right)
    rows = [
        default_row,
        _accuracy_row(run.masked_metric, "kaneko2022", masked_right),
        _accuracy_row("aul", "default", (t.loc[~t["special"], "unmasked_rank"] == 1).to_numpy()),
        _accuracy_row("aul", "kaneko2022", (t["unmasked_rank"] == 1).to_numpy()),
        _accuracy_row("aul", "paired", aul_right_there),
    ]
    name = METRICS[run.masked_metric].name
    contingency = pd.DataFrame(
        [
            [int(np.sum(masked_right & aul_right_there)), int(np.sum(masked_right & ~aul_right_there))],
            [int(np.sum(~masked_right & aul_right_there)), int(np.sum(~masked_right & ~aul_right_there))],
        ],
        index=[f"{name} right", f"{name} wrong"],
        columns=["AUL right", "AUL wrong"],
    )
    return AccuracyComparison(
        run.model,
        run.dataset,
        run.masked_metric,
        pd.DataFrame(rows),
        mcnemar(masked_right, aul_right_there),
        contingency,
        PAIRED_TOKENS[run.masked_metric],
        int(t["pair_id"].nunique()),
    )


def published_label(model: str) -> str:
    """How a paper model's reference rows are labelled: 'bert-base-cased (published)'."""
    return f"{model} ({PUBLISHED_TAG})"


def accuracy_table(comparisons: Sequence[AccuracyComparison], positions: str = "default", *, published: bool = True) -> pd.DataFrame:
    """Table 1, long: one row per (model, source, dataset, metric) with accuracy (%) and McNemar's p.

    `positions` picks the definition ("default" or "kaneko2022"). McNemar columns
    (`mcnemar_p`, `mcnemar_b`, `mcnemar_c`: tokens only the masked metric / only AUL
    gets right) are on both rows of a comparison. Published rows have NaN there.
    """
    if positions not in POSITIONS:
        raise InputError(f"Unknown positions definition {positions!r}: choose default or kaneko2022.")
    rows = []
    for c in comparisons:
        test = {"mcnemar_p": c.mcnemar.p_value, "mcnemar_b": c.mcnemar.b, "mcnemar_c": c.mcnemar.c, "mcnemar_method": c.mcnemar.method}
        for metric in (c.masked_metric, "aul"):
            r = c.accuracy[(c.accuracy["metric"] == metric) & (c.accuracy["positions"] == positions)].iloc[0]
            rows.append(
                _dataset_row(
                    c.model,
                    SOURCE_RUN,
                    c.dataset,
                    metric,
                    accuracy=r["accuracy"],
                    ci_low=r["ci_low"],
                    ci_high=r["ci_high"],
                    tokens=r["total"],
                    unit=r["unit"],
                    hits=r["hits"],
                    **test,
                )
            )
    if published:
        for model, values in TOKEN_ACCURACY.items():
            for key, value in values.items():
                metric, _, ds = key.partition("_")
                dataset = {"cp": "crows-pairs", "ss": "stereoset", "": "crows-pairs" if metric == "cps" else "stereoset"}[ds]
                rows.append(_dataset_row(published_label(model), SOURCE_PAPER, dataset, metric, accuracy=value))
    return _tidy(rows, ["accuracy", "ci_low", "ci_high", "tokens", "unit", "hits", "mcnemar_p", "mcnemar_b", "mcnemar_c", "mcnemar_method"])


# ---------------------------------------------------------------------------------------
# Table 3: advantaged and disadvantaged groups of CrowS-Pairs
# ---------------------------------------------------------------------------------------

GROUP_METRICS = ("all_masked", "aul", "aula")
GROUP_LABELS = {"adv": "Adv", "dis": "Dis", "diff": "Diff"}


def group_table(results: Mapping[str, EvaluationResult], metrics: Sequence[str] = GROUP_METRICS, *, published: bool = True) -> pd.DataFrame:
    """Table 3, long: per (model, source, metric) the Adv and Dis bias scores and |Adv − Dis|.

    `results` maps a model label to its CrowS-Pairs `EvaluationResult`. Dis = stereo rows,
    Adv = antistereo rows (spec, "Pairs"). Columns `group` ("adv", "dis", "diff"),
    `bias_score`, and for adv/dis the 95% Wilson interval and N. Metrics a result did not
    score are left out.
    """
    rows = []
    for model, result in results.items():
        for metric in metrics:
            block = result.summary["metrics"].get(metric)
            if block is None:
                continue
            groups = block.get("by_group", {})
            if not groups:
                raise InputError(f"{model}: the dataset has no stereo/antistereo directions, so no Adv/Dis groups.")
            scores = {}
            for g in ("adv", "dis"):
                b = groups.get(g, {})
                scores[g] = b.get("bias_score", math.nan)
                rows.append(
                    _group_row(
                        model,
                        SOURCE_RUN,
                        metric,
                        g,
                        bias_score=scores[g],
                        ci_low=b.get("ci_low", math.nan),
                        ci_high=b.get("ci_high", math.nan),
                        n=b.get("n", 0),
                    )
                )
            rows.append(_group_row(model, SOURCE_RUN, metric, "diff", bias_score=abs(scores["adv"] - scores["dis"])))
    if published:
        for model, values in GROUP_SCORES.items():
            for metric in metrics:
                if metric in values:
                    for g, value in zip(("adv", "dis", "diff"), values[metric]):
                        rows.append(_group_row(published_label(model), SOURCE_PAPER, metric, g, bias_score=value))
    return _tidy(rows, ["bias_score", "ci_low", "ci_high", "n"])


# ---------------------------------------------------------------------------------------
# Table 5: bias scores of every metric
# ---------------------------------------------------------------------------------------


#: Table 5's values: those of the summary's metric blocks.
_BIAS_COLUMNS = ("bias_score", "ci_low", "ci_high", "n", "ties", "undecidable")


def bias_score_table(results: Mapping[str, Mapping[str, EvaluationResult]], *, published: bool = True) -> pd.DataFrame:
    """Table 5, long: one row per (model, source, dataset, metric) with the bias score and its interval.

    `results` maps a model label to {dataset name: EvaluationResult}. Every metric a
    result holds is listed; the paper printed CPS, AUL, AULA on CP and SSS, AUL, AULA on SS.
    """
    rows = []
    for model, by_dataset in results.items():
        for dataset, result in by_dataset.items():
            for metric, b in result.summary["metrics"].items():
                rows.append(_dataset_row(model, SOURCE_RUN, dataset, metric, **{column: b[column] for column in _BIAS_COLUMNS}))
    if published:
        for model, by_dataset in BIAS_SCORES.items():
            for dataset, values in by_dataset.items():
                for metric, value in values.items():
                    rows.append(_dataset_row(published_label(model), SOURCE_PAPER, dataset, metric, bias_score=value))
    return _tidy(rows, _BIAS_COLUMNS)


# ---------------------------------------------------------------------------------------
# Layout
# ---------------------------------------------------------------------------------------


def _tidy(rows: list[dict[str, Any]], values: Sequence[str]) -> pd.DataFrame:
    frame = pd.DataFrame(rows)
    for column in values:
        if column not in frame:
            frame[column] = np.nan
    if "metric" in frame:
        frame.insert(frame.columns.get_loc("metric") + 1, "name", frame["metric"].map(lambda m: METRICS[m].name if m in METRICS else m))
    return frame


def _dataset_row(model: str, source: str, dataset: str, metric: str, **values: Any) -> dict[str, Any]:
    """A row of a per-dataset table: whose, from where, the dataset, the metric, its paper-style column, then `values`."""
    return {"model": model, "source": source, "dataset": dataset, "metric": metric, "column": column_label(metric, dataset), **values}


def _group_row(model: str, source: str, metric: str, group: str, **values: Any) -> dict[str, Any]:
    """A row of Table 3: whose, from where, the metric, the group (adv, dis, diff), its paper-style column, then `values`."""
    return {"model": model, "source": source, "metric": metric, "group": group, "column": column_label(metric, group=group), **values}


def column_label(metric: str, dataset: str | None = None, group: str | None = None) -> str:
    """A paper-style column header: 'AUL (CP)', 'All Masked Adv', ..."""
    name = METRICS[metric].name
    if group is not None:
        return f"{name} {GROUP_LABELS[group]}"
    return f"{name} ({DATASET_LABELS.get(dataset, dataset)})" if dataset else name


def paper_layout(table: pd.DataFrame, value: str = "accuracy") -> pd.DataFrame:
    """A long table as the paper prints it: one row per (model, source), one column per `column` header.

    Rows and columns keep the order in which they first appear in `table`.
    """
    data = table.drop_duplicates(["model", "source", "column"])
    rows = list(dict.fromkeys(zip(data["model"], data["source"])))
    wide = data.set_index(["model", "source", "column"])[value].unstack("column")
    wide = wide.reindex(index=pd.MultiIndex.from_tuples(rows, names=["model", "source"]), columns=list(dict.fromkeys(data["column"])))
    wide = wide.reset_index()
    wide.columns.name = None
    return wide


__all__ = [
    "AccuracyComparison",
    "DATASET_LABELS",
    "GROUP_METRICS",
    "MASKED_METRIC",
    "POSITIONS",
    "PUBLISHED_TAG",
    "SOURCE_PAPER",
    "SOURCE_RUN",
    "TokenRun",
    "accuracy_table",
    "bias_score_table",
    "cached_pair_records",
    "column_label",
    "compare_accuracy",
    "dataset_pairs",
    "encode_sentence",
    "group_table",
    "paper_layout",
    "published_label",
    "sss_instances",
    "token_frame",
    "token_rows",
    "token_ranks",
]
