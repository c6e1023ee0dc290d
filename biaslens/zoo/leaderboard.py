"""The leaderboard of a results store: one row per model, a column per dataset and metric, ranks and their stability.

`leaderboard(summaries, types, ...)` is the table (frames only, as the analyses return them): each model's bias score
and 95% Wilson interval per dataset × metric (for one convention, precision and compat mode), filtered by family, kind
and size, or restricted to one bias type (its scores over that type's pairs). A column is one dataset scored (its file's
sha256 and the pairs chosen: `biaslens.zoo.store.dataset_names`), whatever its label: two datasets labelled alike get
two columns, told apart and said in `Leaderboard.notes`. Each model's row carries its sanity verdict (stored with its
cells: "looks untrained" is said beside its rank). `rank_intervals` says how firmly each
model holds its rank in one column when the pairs are resampled (a paired bootstrap: the same resampled pairs for every
model), and `paired_rows` compares two models pair by pair (`biaslens.analyses.paired`: bootstrap interval of the
difference, McNemar's exact test) from their stored records. Nothing is scored: everything comes from the store.

The rank-interval function lives here so that it can be swapped for a shared one (`biaslens.analyses`) later.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence, cast

import numpy as np
import pandas as pd

from biaslens.analyses.sanity import worst_verdict
from biaslens.errors import InputError
from biaslens.zoo.store import ResultsStore, by_version, dataset_names, metric_goal, metric_order

#: Model sizes (parameters) the leaderboard filters by: (label, at least, below).
SIZES: tuple[tuple[str, float, float], ...] = (
    ("< 100M", 0, 1e8),
    ("100M–500M", 1e8, 5e8),
    ("500M–2B", 5e8, 2e9),
    ("2B–10B", 2e9, 1e10),
    ("≥ 10B", 1e10, math.inf),
)
#: Resamples of the rank intervals.
RANK_RESAMPLES = 1000
#: What the leaderboard ranks by: the distance of a bias score from 50 (no preference), smallest first.
IDEAL = 50.0
#: The columns that describe a model in `Leaderboard.rows`, before its scores; `sanity` is its verdict ("ok", "weak",
#: "untrained", "" not checked: the most worrying of its cells'), `sanity_message` that verdict's line.
MODEL_COLUMNS = (
    "model",
    "sanity",
    "family",
    "kind",
    "size",
    "parameters",
    "model_revision",
    "model_fingerprint",
    "model_id",
    "sanity_message",
)


def size_label(parameters: float | None) -> str:
    """The size bin of a number of parameters ("" when unknown)."""
    if parameters is None or (isinstance(parameters, float) and math.isnan(parameters)):
        return ""
    return next(label for label, low, high in SIZES if low <= parameters < high)


@dataclass(frozen=True)
class Column:
    """A score column: a dataset and a metric (for the leaderboard's convention, precision and compat mode)."""

    name: str  # "crows-pairs · AUL"
    dataset: str  # the dataset's name: its label, told apart from another dataset's of the same label
    metric: str
    dataset_sha256: str = ""  # what was scored: the file and the pairs chosen
    selection: str = ""
    #: Its ideal value and the order that puts the best first: a bias score's 50, "closest"; a multiple-choice
    #: statistic's (`biaslens.zoo.store.metric_goal`: bias scores 0 "closest", accuracies 1 "highest").
    ideal: float = IDEAL
    better: str = "closest"

    @property
    def choice(self) -> bool:
        """A multiple-choice statistic's column (no pairs: no rank intervals, no paired comparison)."""
        from biaslens.zoo.choicecells import choice_statistics

        return self.metric in choice_statistics()


@dataclass
class Leaderboard:
    """One row per model (`MODEL_COLUMNS`, then per column its score, `<name> low`, `<name> high`, `<name> n`); `cells`
    and `units` give, per (row, column name), the cell's and the unit's key (the unit opens in the explorer); `notes`
    what a reader must know of the columns (datasets that share a label, told apart)."""

    rows: pd.DataFrame
    columns: list[Column]
    cells: dict[tuple[int, str], str] = field(default_factory=dict)
    units: dict[tuple[int, str], str] = field(default_factory=dict)
    convention: str | None = None
    precision: str | None = None
    compat: str | None = None
    notes: list[str] = field(default_factory=list)
    choice_convention: str | None = None  # the multiple-choice columns' convention (lm-eval, lm-eval-norm, original)

    def column(self, name: str) -> Column:
        return next(c for c in self.columns if c.name == name)

    def sorted(self, by: str | None, order: str = "closest") -> pd.DataFrame:
        """The rows sorted by a score column: "closest" to its ideal (50; a bias score of BBQ 0, an accuracy 1) first,
        "highest" or "lowest" first (no score last); by None: by model name."""
        if by is None:
            return self.rows.sort_values("model", kind="stable", key=lambda s: s.str.lower())
        values = self.rows[by]
        ideal = next((c.ideal for c in self.columns if c.name == by), IDEAL)
        key = (values - ideal).abs() if order == "closest" else -values if order == "highest" else values
        return self.rows.assign(_key=key).sort_values(["_key", "model"], kind="stable", na_position="last").drop(columns="_key")


@dataclass(frozen=True)
class Choices:
    """What the store offers to filter and choose by."""

    families: list[str]
    kinds: list[str]
    sizes: list[str]
    bias_types: list[str]
    conventions: list[str]
    precisions: list[str]
    compats: list[str]
    choice_conventions: list[str] = field(default_factory=list)


def _where(frame: pd.DataFrame, mask: Any) -> pd.DataFrame:
    """The rows of `frame` where `mask` holds (typed: pandas' stubs make `frame[mask]` a union)."""
    return cast(pd.DataFrame, frame[mask])


def choices(summaries: pd.DataFrame, types: pd.DataFrame) -> Choices:
    done = _where(summaries, summaries["status"] == "done")

    def values(column: str) -> list[str]:
        return sorted({str(v) for v in done[column].dropna() if str(v)})

    sizes = {size_label(p) for p in done["parameters"]} - {""}
    choice = _is_choice(done)
    return Choices(
        families=values("family"),
        kinds=values("kind"),
        sizes=[label for label, _, _ in SIZES if label in sizes],
        bias_types=sorted({t for t in types["bias_type"].dropna() if t}),
        conventions=_by_count(_where(done, ~choice), "convention"),
        precisions=_by_count(done, "precision"),
        compats=_by_count(_where(done, ~choice), "compat"),
        choice_conventions=_by_count(_where(done, choice), "convention"),
    )


def _is_choice(frame: pd.DataFrame) -> pd.Series:
    """Which rows are multiple-choice cells (their metric a choice statistic)."""
    from biaslens.zoo.choicecells import choice_statistics

    return cast(pd.Series, frame["metric"].isin(choice_statistics()))


def _by_count(frame: pd.DataFrame, column: str) -> list[str]:
    """A column's values, the most frequent first (the default a page offers)."""
    return [str(v) for v in frame[column].value_counts().index]


def leaderboard(
    summaries: pd.DataFrame,
    types: pd.DataFrame | None = None,
    *,
    convention: str | None = None,
    precision: str | None = None,
    compat: str | None = None,
    families: Iterable[str] | None = None,
    kinds: Iterable[str] | None = None,
    sizes: Iterable[str] | None = None,
    bias_type: str | None = None,
    metric_names: dict[str, str] | None = None,
    choice_convention: str | None = None,
) -> Leaderboard:
    """The leaderboard of a store's summaries (`ResultsStore.summaries()`, `type_summaries()`); see the module.

    Convention, precision and compat default to the store's most frequent; a model's newest biaslens version's cells are
    used. `bias_type` replaces each score by its score over that type's pairs (no such pairs: no score); BBQ's
    categories are its bias types. Multiple-choice statistics (BBQ, Winogender) are columns of their own, under
    `choice_convention` (default: the store's most frequent of theirs)."""
    done = _where(summaries, summaries["status"] == "done")
    names, notes = dataset_names(done)  # over the whole store: a column's name does not change with the filters
    done = done.assign(_dataset=names)
    choice = _is_choice(done)
    convention = convention or next(iter(_by_count(_where(done, ~choice), "convention")), None)
    choice_convention = choice_convention or next(iter(_by_count(_where(done, choice), "convention")), None)
    precision = precision or next(iter(_by_count(done, "precision")), None)
    compat = compat or next(iter(_by_count(_where(done, ~choice), "compat")), None)
    pairs = ~choice & (done["convention"] == convention) & (done["compat"] == compat)
    frame = _where(done, (pairs | (choice & (done["convention"] == choice_convention))) & (done["precision"] == precision))
    frame = frame.assign(size=[size_label(p) for p in frame["parameters"]])
    for column, wanted in (("family", families), ("kind", kinds), ("size", sizes)):
        if wanted is not None:
            frame = _where(frame, frame[column].isin(list(wanted)))
    if bias_type is not None:
        if types is None:
            raise InputError("A bias type needs the store's scores per bias type.")
        by_type = _where(types, types["bias_type"] == bias_type)
        scores = {c: dict(zip(by_type["key"], by_type[c])) for c in ("bias_score", "ci_low", "ci_high", "n")}
        frame = frame.assign(**{c: [scores[c].get(k) for k in frame["key"]] for c in scores})
    metric_label = metric_names or _metric_names()
    order = metric_order()
    frame = frame.assign(_order=frame["metric"].map(lambda m: order.get(m, len(order))))
    frame = frame.assign(_column=frame["_dataset"].astype(str) + " · " + frame["metric"].map(lambda m: metric_label.get(m, m)).astype(str))
    frame = by_version(frame).drop_duplicates(subset=["model_fingerprint", "model_revision", "_column"], keep="last")
    described = cast(pd.DataFrame, frame.sort_values(["_dataset", "_order"])[["_column", "_dataset", "metric", "dataset_sha256", "selection"]])
    columns = [
        Column(n, d, m, sha, sel, *metric_goal(m)) for n, d, m, sha, sel in described.drop_duplicates(subset=["_column"]).itertuples(index=False)
    ]
    models = frame.sort_values("created").drop_duplicates(["model_fingerprint", "model_revision"], keep="last")
    verdicts: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for f, r, status, message in zip(frame["model_fingerprint"], frame["model_revision"], frame["sanity"], frame["sanity_message"]):
        verdicts.setdefault((str(f), _revision(r)), []).append((str(status or ""), str(message or "")))
    worst = {k: worst_verdict(s for s, _ in v) for k, v in verdicts.items()}
    message = {k: next((m for s, m in v if s == worst[k]), "") for k, v in verdicts.items()}
    identities = [(str(f), _revision(r)) for f, r in zip(models["model_fingerprint"], models["model_revision"])]
    rows = pd.DataFrame(
        {
            "model": models["model_label"].astype(str).to_numpy(),
            "sanity": [worst[i] for i in identities],
            "family": models["family"].fillna("").astype(str).to_numpy(),
            "kind": models["kind"].fillna("").astype(str).to_numpy(),
            "size": models["size"].to_numpy(),
            "parameters": models["parameters"].to_numpy(),
            "model_revision": models["model_revision"].fillna("").astype(str).to_numpy(),
            "model_fingerprint": models["model_fingerprint"].astype(str).to_numpy(),
            "model_id": models["model_id"].fillna("").astype(str).to_numpy(),
            "sanity_message": [message[i] for i in identities],
        }
    )
    rows["model"] = _unique_labels(rows)
    index = {identity: i for i, identity in enumerate(identities)}
    row_of = [index[(str(f), _revision(r))] for f, r in zip(frame["model_fingerprint"], frame["model_revision"])]
    frame = frame.assign(_row=row_of)
    board = Leaderboard(rows, columns, convention=convention, precision=precision, compat=compat, notes=notes, choice_convention=choice_convention)
    for column in columns:
        part = frame[frame["_column"] == column.name].set_index("_row")
        for suffix, source in (("", "bias_score"), (" low", "ci_low"), (" high", "ci_high"), (" n", "n")):
            rows[column.name + suffix] = pd.Series(part[source], dtype=float).reindex(range(len(rows))).to_numpy()
        for i, key, unit in zip(part.index, part["key"], part["unit"]):
            board.cells[(int(i), column.name)] = str(key)
            board.units[(int(i), column.name)] = str(unit)
    return board


def _revision(revision: Any) -> str:
    """A model's revision as a row keeps it ("" for none)."""
    return "" if revision is None or (isinstance(revision, float) and math.isnan(revision)) else str(revision)


def _unique_labels(rows: pd.DataFrame) -> list[str]:
    """Each row's label; a label two models share gets its revision or fingerprint added."""
    labels = list(rows["model"])
    counts: dict[str, int] = {}
    for label in labels:
        counts[label] = counts.get(label, 0) + 1
    out = []
    for label, revision, fingerprint in zip(labels, rows["model_revision"], rows["model_fingerprint"]):
        if counts[label] > 1:
            label = f"{label} ({(revision or fingerprint.split(':')[-1])[:10]})"
        out.append(label)
    return out


def _metric_names() -> dict[str, str]:
    from biaslens.engine.metrics import METRICS

    return {k: m.name for k, m in METRICS.items()}


def score_text(score: float, low: float, high: float, digits: int = 1) -> str:
    """A score with its interval, padded so that sorting the text sorts the (non-negative) scores: " 62.3 [58.1, 66.4]";
    `digits` 3 for a multiple-choice statistic (a fraction): "0.625 [0.306, 0.863]"."""
    if score is None or math.isnan(score):
        return ""
    interval = "" if low is None or high is None or math.isnan(low) or math.isnan(high) else f" [{low:.{digits}f}, {high:.{digits}f}]"
    return f"{score:{4 + digits}.{digits}f}{interval}"


# ---------------------------------------------------------------------------------------
# From the stored pairs: rank intervals, paired comparisons
# ---------------------------------------------------------------------------------------


def stored_wins(store: ResultsStore, keys: Sequence[str]) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per cell: (pair ids, True where the stereotypical sentence scores strictly higher): the bias score's wins."""
    out = []
    for key in keys:
        records = store.cell_records(key)
        out.append((records["pair_id"].to_numpy(), (records["stereo"].to_numpy(float) > records["anti"].to_numpy(float))))
    return out


def rank_intervals(
    models: Sequence[str],
    wins: Sequence[tuple[np.ndarray, np.ndarray]],
    *,
    n_resamples: int = RANK_RESAMPLES,
    seed: int = 0,
    confidence: float = 0.95,
) -> pd.DataFrame:
    """How firmly each model holds its rank: rank 1 = the bias score closest to 50.

    The pairs (the union of every model's) are resampled with replacement, the same draw for every model (a paired
    bootstrap); each resample's bias scores are ranked. Per model: its score and rank, the `confidence` interval of its
    rank over the resamples (`rank_low`, `rank_high`), and `kept`, the share of resamples that give it its own rank.
    Ties share the best rank. A model lacking some pairs (left out for its tokenizer) is scored over those it has.
    """
    if len(models) != len(wins) or not models:
        raise InputError("rank_intervals needs one set of wins per model, and at least one model.")
    pair_ids = np.unique(np.concatenate([ids for ids, _ in wins]))
    position = {p: i for i, p in enumerate(pair_ids)}
    won = np.zeros((len(models), len(pair_ids)))
    has = np.zeros((len(models), len(pair_ids)))
    for m, (ids, w) in enumerate(wins):
        cols = np.fromiter((position[p] for p in ids), dtype=np.int64, count=len(ids))
        won[m, cols] = w.astype(float)
        has[m, cols] = 1.0
    scores = 100.0 * won.sum(axis=1) / np.maximum(has.sum(axis=1), 1)
    rank = _ranks(np.abs(scores - IDEAL)[:, None])[:, 0]
    rng = np.random.default_rng(seed)
    ranks = []
    for start in range(0, n_resamples, 250):
        block = min(250, n_resamples - start)
        draws = rng.integers(0, len(pair_ids), size=(block, len(pair_ids)))
        counts = np.stack([np.bincount(d, minlength=len(pair_ids)) for d in draws], axis=1).astype(float)  # pairs x block
        with np.errstate(invalid="ignore", divide="ignore"):
            resampled = 100.0 * (won @ counts) / (has @ counts)
        ranks.append(_ranks(np.abs(np.nan_to_num(resampled, nan=np.inf) - IDEAL)))
    drawn = np.concatenate(ranks, axis=1)
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(drawn, [tail, 1.0 - tail], axis=1, method="nearest")
    return pd.DataFrame(
        {
            "model": list(models),
            "bias_score": scores,
            "rank": rank.astype(int),
            "rank_low": low.astype(int),
            "rank_high": high.astype(int),
            "kept": (drawn == rank[:, None]).mean(axis=1),
        }
    ).sort_values(["rank", "model"], kind="stable", ignore_index=True)


def _ranks(distance: np.ndarray) -> np.ndarray:
    """Ranks (1 = smallest) down each column; ties share the best rank."""
    from scipy.stats import rankdata

    return rankdata(distance, method="min", axis=0)


def paired_rows(store: ResultsStore, first: dict[str, str], second: dict[str, str], names: tuple[str, str], seed: int = 0) -> pd.DataFrame:
    """Two models compared pair by pair on every dataset both have: `first` and `second` map a dataset to the unit
    holding the model's cells there. One row per dataset and metric: `paired_comparison`'s columns, with the dataset."""
    from biaslens.analyses.paired import PAIRED_COLUMNS, paired_comparison

    from biaslens.zoo.choicecells import choice_statistics

    frames = []
    rows = store.summaries()
    choice_units = set(rows.loc[rows["metric"].isin(choice_statistics()), "unit"])
    for dataset in [d for d in first if d in second and first[d] not in choice_units]:  # (pairs only: items are not pairs)
        a, b = store.result(first[dataset]), store.result(second[dataset])
        metrics = [m for m in a.summary["metrics"] if m in b.summary["metrics"]]
        if not metrics:
            continue
        a, b = _common_pairs(a, b, metrics)
        table = paired_comparison(a, b, metrics, seed=seed)
        frames.append(table.assign(dataset=dataset, first=names[0], second=names[1]))
    if not frames:
        raise InputError(f"{names[0]} and {names[1]} share no dataset and metric in this store: nothing to compare.")
    out = pd.concat(frames, ignore_index=True)
    return cast(pd.DataFrame, out[["dataset", "first", "second", *PAIRED_COLUMNS]])


def _common_pairs(a, b, metrics: Sequence[str]):
    """Both results restricted to the pairs both scored (a tokenizer can leave some out), summarised again."""
    from biaslens.engine.evaluation import EvaluationResult, summarize

    common = set(a.pairs["pair_id"]) & set(b.pairs["pair_id"])
    out = []
    for result in (a, b):
        kept = result.pairs[result.pairs["pair_id"].isin(common)].reset_index(drop=True)
        out.append(EvaluationResult(kept, summarize(kept, list(metrics), result.manifest), result.warnings, 0))
    return out[0], out[1]


__all__ = [
    "IDEAL",
    "MODEL_COLUMNS",
    "RANK_RESAMPLES",
    "SIZES",
    "Choices",
    "Column",
    "Leaderboard",
    "choices",
    "leaderboard",
    "paired_rows",
    "rank_intervals",
    "score_text",
    "size_label",
    "stored_wins",
]
