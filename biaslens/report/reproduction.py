"""Reproduce Kaneko & Bollegala (2022) for any model: Tables 1-5 and Figure 1, beside the published numbers.

`analyse_model` runs every analysis for one loaded model on the datasets (dataset runs
go through `evaluate` and the `ResultCache`, so what the app or an earlier report
scored is read back, not computed again); `ReproductionReport` gathers several models'
analyses with the word-frequency table (no model needed), lays them out as the paper's
tables with the published rows beside them, and `save` writes

* one CSV per table, long format (`table1_token_accuracy.csv`, `table2_word_frequency.csv` and
  `table2_top_words.csv` (the paper's Table 2), `table2_excluded_words.csv`, `table2_extra_occurrence_ranks.csv`,
  `table3_groups.csv`, `table4_shuffle.csv`, `table5_bias_scores.csv`,
  `figure1_auc.csv`, `figure1_roc.csv`, ...);
* `report.md` (figures as SVG files in `figures/`) and `report.html` (self-contained,
  figures inline);
* `runs/<model>/<dataset>/` (both as folder-safe names): each run's `pairs.csv` and `summary.json` (as `evaluate`
  writes them) and the per-token tables behind Tables 1 and 4;
* `manifest.json`: options, datasets (file, sha256) and every model's manifest.

Rows computed here have `source` "this run"; the paper's rows are labelled
"<model> (published)" with `source` "Kaneko & Bollegala (2022)". A model whose sanity
check fails (e.g. random weights) is flagged at the top of the report.
"""

from __future__ import annotations

import html
import math
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

import pandas as pd

from biaslens.figures import charts as figures
from biaslens.analyses.agreement import READING, Agreement, agreement_table, human_agreement
from biaslens.analyses.papers import (
    GROUP_METRICS,
    POSITIONS,
    SOURCE_RUN,
    AccuracyComparison,
    accuracy_table,
    bias_score_table,
    compare_accuracy,
    dataset_pairs,
    group_table,
    paper_layout,
    token_ranks,
)
from biaslens.engine.cache import ResultCache
from biaslens.data.datasets import PairDataset
from biaslens.errors import InputError
from biaslens.engine.evaluation import EvaluationResult, evaluate
from biaslens.data.export import atomic_write, escape_markdown, safe_csv, to_json
from biaslens.analyses.frequency import WordFrequency, word_frequency
from biaslens.engine.metrics import METRICS, PAPER_METRICS, parse_metrics
from biaslens.engine.models import LanguageModel
from biaslens.engine.options import DEFAULT_COMPAT, Compat, RunOptions
from biaslens.analyses.sanity import SanityReport
from biaslens.analyses.sanity import model_verdict
from biaslens.analyses.shuffle import ShuffleComparison, compare_shuffle, sensitivity_run, shuffle_table

#: The analyses, in the paper's order of presentation, with what each produces.
ANALYSES: dict[str, str] = {
    "accuracy": "Table 1: token prediction accuracy, CPS vs AUL (CrowS-Pairs) and SSS vs AUL (StereoSet), McNemar's test",
    "frequency": "Table 2: corpus frequency of the modified words of the advantaged and disadvantaged groups (CrowS-Pairs)",
    "groups": "Table 3: All Masked, AUL and AULA bias scores of the advantaged and disadvantaged groups (CrowS-Pairs)",
    "shuffle": "Table 4: AUL accuracy on shuffled sentences and on StereoSet's unrelated sentences",
    "scores": "Table 5: bias scores of every metric",
    "agreement": "Figure 1: ROC curves and AUC of each metric's per-pair margin against CrowS-Pairs' human ratings",
}
DEFAULT_DATASETS = ("crows-pairs", "stereoset")

#: A cell resting on fewer pairs than this (or, for Figure 1, fewer pairs of a class than SMALL_CLASS) gets a visible note.
SMALL_PAIRS = 30
SMALL_CLASS = 10
GROUP_NAMES = {"adv": "Adv", "dis": "Dis"}

#: stage label, pairs done, pairs in the stage
StageProgress = Callable[[str, float, int], None]


@dataclass(frozen=True)
class ReportOptions:
    """What a report computes: the analyses, the scoring mode, which pairs, the seeds."""

    analyses: tuple[str, ...] = tuple(ANALYSES)
    metrics: tuple[str, ...] = PAPER_METRICS  # Table 5 and Figure 1
    compat: Compat = DEFAULT_COMPAT  # a mode name is accepted too
    limit: int | None = None
    sample: int | None = None
    seed: int = 0  # of --sample
    shuffle_seed: int = 0
    batch_tokens: int | None = None

    def __post_init__(self) -> None:
        unknown = [a for a in self.analyses if a not in ANALYSES]
        if unknown or not self.analyses:
            raise InputError(f"Unknown analysis {', '.join(unknown) or '(none)'}: choose from {', '.join(ANALYSES)}.")
        object.__setattr__(self, "metrics", tuple(parse_metrics(list(self.metrics))))
        object.__setattr__(self, "compat", Compat.parse(self.compat))
        if self.shuffle_seed < 0:
            raise InputError(f"The shuffle seed must be a non-negative integer, got {self.shuffle_seed}.")

    @property
    def positions(self) -> str:
        """The token-accuracy positions definition of the scoring mode."""
        return self.compat.value

    @classmethod
    def from_run(cls, run: RunOptions, analyses: Sequence[str] = tuple(ANALYSES), shuffle_seed: int = 0) -> "ReportOptions":
        """The report options of a validated `RunOptions` (its metrics, mode, pairs and batch size) and the analyses."""
        return cls(tuple(analyses), run.metrics, run.compat, run.limit, run.sample, run.seed, shuffle_seed, run.batch_tokens)

    def selection(self) -> dict[str, Any]:
        return {"limit": self.limit, "sample": self.sample, "seed": self.seed}


#: The CSV files (stems) each analysis may write at the top of a report's folder (`ReproductionReport.tables`), and the
#: report's own files: `report_files` lists them, for `biaslens report` to check its --out before any scoring.
TABLE_STEMS: dict[str, tuple[str, ...]] = {
    "accuracy": ("table1_token_accuracy", "table1_accuracy_definitions"),
    "frequency": ("table2_word_frequency", "table2_top_words", "table2_excluded_words", "table2_extra_occurrence_ranks"),
    "groups": ("table3_groups",),
    "shuffle": ("table4_shuffle",),
    "scores": ("table5_bias_scores",),
    "agreement": ("figure1_auc", "figure1_roc"),
}
REPORT_FILES = ("report.md", "report.html", "manifest.json")


def report_files(options: ReportOptions) -> list[str]:
    """The files a report of these options may write at the top of its folder (its tables, report.md, .html, manifest)."""
    return [*(f"{stem}.csv" for analysis in options.analyses for stem in TABLE_STEMS[analysis]), *REPORT_FILES]


def _needs_pairs_direction(dataset: PairDataset) -> bool:
    return any(p.direction in ("stereo", "antistereo") for p in dataset.pairs)


def _has_annotations(dataset: PairDataset) -> bool:
    return any(p.annotations for p in dataset.pairs)


def evaluation_metrics(dataset: PairDataset, options: ReportOptions) -> list[str]:
    """The metrics `evaluate` must score on a dataset for the chosen analyses (empty: no run needed)."""
    wanted: set[str] = set()
    if "scores" in options.analyses:
        wanted |= set(options.metrics)
    if "agreement" in options.analyses and _has_annotations(dataset):
        wanted |= set(options.metrics)
    if "groups" in options.analyses and _needs_pairs_direction(dataset):
        wanted |= set(GROUP_METRICS)
    return [m for m in METRICS if m in wanted]


# ---------------------------------------------------------------------------------------
# One model
# ---------------------------------------------------------------------------------------


@dataclass
class ModelAnalyses:
    """Everything the report holds for one model (label = how the tables name it)."""

    label: str
    manifest: dict[str, Any]
    sanity: SanityReport | None
    evaluations: dict[str, EvaluationResult] = field(default_factory=dict)  # dataset -> run
    accuracy: list[AccuracyComparison] = field(default_factory=list)
    token_tables: dict[str, pd.DataFrame] = field(default_factory=dict)  # "<dataset>/tokens_accuracy" -> tokens
    shuffle: list[ShuffleComparison] = field(default_factory=list)
    agreement: Agreement | None = None
    cached_pairs: int = 0  # pair records read from the result cache (all analyses)


def reusable_scores(
    find: Callable[[ReportOptions], ModelAnalyses | None], datasets: Iterable[str], options: ReportOptions
) -> dict[str, EvaluationResult] | None:
    """The bias-score runs (dataset -> run) that a finished analysis already holds for `options`, or None.

    `find(options)` returns the finished `ModelAnalyses` of one model kept under those options (or None). A full analysis
    with these options, or a scores-only one (`analyses=("scores",)`, as the model comparison of Table 5 runs), can be reused
    when it ran exactly these `datasets` and every run holds at least the options' metrics.
    """
    wanted = set(datasets)
    for candidate in (options, replace(options, analyses=("scores",))):
        found = find(candidate)
        if (
            found is not None
            and set(found.evaluations) == wanted
            and all(set(options.metrics) <= set(run.summary["metrics"]) for run in found.evaluations.values())
        ):
            return found.evaluations
    return None


def analyse_model(
    lm: LanguageModel,
    datasets: Mapping[str, PairDataset],
    options: ReportOptions = ReportOptions(),
    *,
    label: str | None = None,
    cache: ResultCache | None = None,
    progress: StageProgress | None = None,
) -> ModelAnalyses:
    """Run the chosen analyses for one model on each dataset (names -> loaded datasets).

    `progress(stage, done_pairs, total_pairs)` is called within each stage (a dataset run,
    the token-accuracy run, the shuffle run). Analyses that need what a dataset lacks
    (directions for Table 3, annotations for Figure 1) skip that dataset.
    """
    sanity = model_verdict(lm)  # the same verdict the app and the CLI show (a lab model: on its own corpus)
    out = ModelAnalyses(label or lm.name, lm.manifest(compat=options.compat, options=asdict(options)), sanity)

    def stage(name: str) -> Callable[[float, int], None] | None:
        return None if progress is None else (lambda done, total: progress(name, done, total))

    for name, dataset in datasets.items():
        metrics = evaluation_metrics(dataset, options)
        if metrics:
            result = evaluate(
                lm,
                dataset,
                metrics,
                compat=options.compat,
                cache=cache,
                batch_tokens=options.batch_tokens,
                progress=stage(f"{name}: bias scores"),
                **options.selection(),
            )
            out.evaluations[name] = result
            out.cached_pairs += result.cached // max(len(metrics), 1)
            if "agreement" in options.analyses and _has_annotations(dataset) and out.agreement is None:
                out.agreement = human_agreement(result, dataset, [m for m in options.metrics if m in metrics])
                out.agreement.model = out.label
        if "accuracy" in options.analyses:
            run = token_ranks(
                lm, dataset, cache=cache, batch_tokens=options.batch_tokens, progress=stage(f"{name}: token accuracy"), **options.selection()
            )
            run.model = out.label
            out.accuracy.append(compare_accuracy(run))
            out.token_tables[f"{name}/tokens_accuracy"] = run.tokens
            out.cached_pairs += run.cached
        if "shuffle" in options.analyses:
            run = sensitivity_run(
                lm,
                dataset,
                seed=options.shuffle_seed,
                limit=options.limit,
                sample=options.sample,
                sample_seed=options.seed,
                cache=cache,
                batch_tokens=options.batch_tokens,
                progress=stage(f"{name}: shuffle"),
            )
            run.model = out.label
            out.shuffle.append(compare_shuffle(run, options.positions))
            out.token_tables[f"{name}/tokens_shuffle"] = run.tokens
            out.cached_pairs += run.cached
    return out


# ---------------------------------------------------------------------------------------
# The report
# ---------------------------------------------------------------------------------------

TITLES = {
    "accuracy": "Table 1 — Token prediction accuracy (%)",
    "frequency": "Table 2 — Corpus frequency of the modified words",
    "groups": "Table 3 — Bias scores of the advantaged (Adv) and disadvantaged (Dis) groups of CrowS-Pairs",
    "shuffle": "Table 4 — AUL token accuracy (%) on shuffled and unrelated sentences",
    "scores": "Table 5 — Bias scores",
    "agreement": "Figure 1 — Agreement with human ratings (CrowS-Pairs)",
}


@dataclass
class ReproductionReport:
    """Several models' analyses, the word-frequency table, and how they were made."""

    options: ReportOptions
    models: list[ModelAnalyses]
    datasets: dict[str, dict[str, Any]]  # name -> {"path", "sha256", "pairs"}
    word_frequency: WordFrequency | None = None
    created: str = field(default_factory=lambda: datetime.now(timezone.utc).isoformat(timespec="seconds"))

    # -- tables ---------------------------------------------------------------------------
    def tables(self) -> dict[str, pd.DataFrame]:
        """The long tables, by CSV file stem (only those of the analyses that ran)."""
        out: dict[str, pd.DataFrame] = {}
        chosen = self.options.analyses
        if "accuracy" in chosen:
            comparisons = [c for m in self.models for c in m.accuracy]
            out["table1_token_accuracy"] = accuracy_table(comparisons, self.options.positions)
            if comparisons:
                out["table1_accuracy_definitions"] = pd.concat(
                    [c.accuracy.assign(model=c.model, dataset=c.dataset) for c in comparisons], ignore_index=True
                )
        if "frequency" in chosen and self.word_frequency is not None:
            out["table2_word_frequency"] = self.word_frequency.mean_ranks
            out["table2_top_words"] = self.word_frequency.merged
            out["table2_excluded_words"] = self.word_frequency.excluded
            out["table2_extra_occurrence_ranks"] = self.word_frequency.occurrence_summary
        if "groups" in chosen:
            runs = {m.label: r for m in self.models if (r := _group_run(m)) is not None}
            out["table3_groups"] = group_table(runs)
        if "shuffle" in chosen:
            out["table4_shuffle"] = shuffle_table([c for m in self.models for c in m.shuffle])
        if "scores" in chosen:
            out["table5_bias_scores"] = bias_score_table({m.label: {d: r for d, r in m.evaluations.items()} for m in self.models})
            out["table5_bias_scores"] = out["table5_bias_scores"][
                out["table5_bias_scores"]["metric"].isin(self.options.metrics) | (out["table5_bias_scores"]["source"] != "this run")
            ].reset_index(drop=True)
        agreements = [m.agreement for m in self.models if m.agreement is not None]
        if "agreement" in chosen and agreements:
            out["figure1_auc"] = agreement_table(agreements)
            out["figure1_roc"] = pd.concat([a.roc.assign(model=a.model) for a in agreements], ignore_index=True)
        return out

    def charts(self) -> dict[str, Any]:
        """The figures (Altair), by file stem."""
        tables = self.tables()
        out: dict[str, Any] = {}
        if "table1_token_accuracy" in tables:
            out["table1_token_accuracy"] = figures.paper_bars(tables["table1_token_accuracy"], "accuracy", TITLES["accuracy"], "token accuracy (%)")
        if "table2_word_frequency" in tables:
            out["table2_word_frequency"] = figures.word_rank_chart(
                _table2_chart_frame(tables["table2_word_frequency"], tables["table2_top_words"]),
                "Table 2 — mean position of each group's words in the merged top-8 list (1 = most frequent)",
            )
        if "table3_groups" in tables:
            out["table3_groups"] = figures.paper_bars(
                tables["table3_groups"], "bias_score", "Table 3 — Adv / Dis bias scores", "bias score", fifty=True
            )
        if "table4_shuffle" in tables:
            out["table4_shuffle"] = figures.paper_bars(
                tables["table4_shuffle"], "accuracy", "Table 4 — AUL accuracy, original / shuffled / unrelated", "token accuracy (%)"
            )
        if "table5_bias_scores" in tables:
            out["table5_bias_scores"] = figures.paper_bars(tables["table5_bias_scores"], "bias_score", TITLES["scores"], "bias score", fifty=True)
        if "figure1_roc" in tables:
            out["figure1_roc"] = figures.roc_chart(tables["figure1_roc"], tables["figure1_auc"])
        return out

    # -- text -----------------------------------------------------------------------------
    def sections(self) -> list[tuple[str, str, list[tuple[str, pd.DataFrame]], str | None]]:
        """(title, explanation, [(caption, table to show)], figure stem) per analysis, in the paper's order."""
        tables = self.tables()
        out = []
        positions = POSITIONS[self.options.positions]
        if "table1_token_accuracy" in tables:
            t = tables["table1_token_accuracy"]
            sss_unit = "per StereoSet instance" if self.options.positions == "default" else "per masked token"
            shown = [(f"Accuracy (%); SSS counted {sss_unit}", paper_layout(t, "accuracy"))]
            tests = t[t["source"] == "this run"].drop_duplicates(["model", "dataset"])
            if len(tests):
                mcn = _counts(tests[["model", "dataset", "mcnemar_b", "mcnemar_c", "mcnemar_p", "mcnemar_method"]]).rename(
                    columns={
                        "mcnemar_b": "masked metric right, AUL wrong",
                        "mcnemar_c": "AUL right, masked metric wrong",
                        "mcnemar_p": "p",
                        "mcnemar_method": "test",
                    }
                )
                shown.append(("McNemar's test between the masked metric and AUL on the tokens both score", mcn))
            defs = tables.get("table1_accuracy_definitions")
            if defs is not None and len(defs):
                shown.append(
                    (
                        "Accuracy under both position definitions",
                        defs[["model", "dataset", "metric", "positions", "unit", "hits", "total", "accuracy", "ci_low", "ci_high"]],
                    )
                )
            text = (
                f"Share of scored tokens whose gold token is the model's top prediction. AUL counts {positions}; CPS the masked "
                "unmodified tokens. SSS, shown here " + sss_unit + ": in the default mode a StereoSet instance is right when the "
                "predicted sub-token sequence in the masked slot equals at least one of its two candidates, each candidate masked with "
                "as many masks as it has sub-tokens (the paper's Token Prediction Accuracy section); in kaneko2022 mode each masked "
                "modified token counts (the released code). Both are under 'Accuracy under both position definitions'. McNemar's "
                "test pairs each token both metrics score (CPS: the unmodified tokens, masked vs unmasked; SSS: the modified tokens, "
                "per token in both modes)."
            )
            out.append((TITLES["accuracy"], text, shown, "table1_token_accuracy"))
        if "table2_word_frequency" in tables and self.word_frequency is not None:
            wf = self.word_frequency
            text = (
                "Modified words of each CrowS-Pairs pair (word-level diff). Dis: the modified words of sent_more in stereo rows and of "
                "sent_less in antistereo rows; Adv: the others. As in the paper: words whose common sense is not the group one are left "
                "out (list below); per bias type a word modified in both groups goes to the group where it is modified more often; the "
                "words of both groups are merged into one list ranked by corpus frequency and the top 8 kept, each marked with its "
                "group; a group's mean rank is the mean position (1-8) of its words in that list (blank: none made the list). Corpus "
                "frequency: the offline wordfreq English list, the documented stand-in for the paper's Wikipedia + BookCorpus counts, "
                "so compare which group ranks higher, not the words one by one."
            )
            shown = [
                ("Per bias type: the merged top-8 list and each group's mean rank", wf.table()),
                ("Words left out", wf.excluded_table()),
                (
                    "Extra, not the paper's statistic: mean corpus rank over every modified-word occurrence, and the most "
                    "modified words (biaslens's earlier reading)",
                    wf.occurrence_table(),
                ),
            ]
            out.append((TITLES["frequency"], text, shown, "table2_word_frequency"))
        if "table3_groups" in tables:
            text = "Dis = stereo rows (sent_more stereotypes a historically disadvantaged group), Adv = antistereo rows; Diff = |Adv − Dis|."
            t = tables["table3_groups"]
            run = t[(t["source"] == SOURCE_RUN) & (t["group"] != "diff")]
            shown = [
                ("Bias score", paper_layout(t, "bias_score")),
                (
                    "This run: each cell with its pairs (n) and 95% Wilson interval",
                    _counts(run[["model", "metric", "group", "n", "bias_score", "ci_low", "ci_high"]]),
                ),
            ]
            out.append((TITLES["groups"], text, shown, "table3_groups"))
        if "table4_shuffle" in tables:
            t = tables["table4_shuffle"]
            shown = [
                ("AUL accuracy (%)", paper_layout(t, "accuracy")),
                ("Drop from the original sentences (points)", paper_layout(t, "drop")),
                (
                    "This run: each accuracy with its tokens (n) and 95% Wilson interval",
                    _counts(t[t["source"] == SOURCE_RUN][["model", "dataset", "condition", "tokens", "accuracy", "ci_low", "ci_high"]]),
                ),
            ]
            tests = t[(t["source"] == "this run") & (t["condition"] == "shuffled")]
            if len(tests):
                shown.append(
                    (
                        "McNemar's test, each token before vs after shuffling",
                        _counts(tests[["model", "dataset", "seed", "mcnemar_b", "mcnemar_c", "mcnemar_p"]]).rename(
                            columns={"mcnemar_b": "right only before", "mcnemar_c": "right only after", "mcnemar_p": "p"}
                        ),
                    )
                )
            text = (
                f"Non-special tokens shuffled with seed {self.options.shuffle_seed} (special tokens stay in place; each token scored at its "
                f"new position). Accuracy counts {positions}. The published 'original' is the paper's Table 1 AUL accuracy."
            )
            out.append((TITLES["shuffle"], text, shown, "table4_shuffle"))
        if "table5_bias_scores" in tables:
            text = "Percentage of pairs whose stereotypical sentence scores higher (50 = no preference)."
            t = tables["table5_bias_scores"]
            shown = [("Bias score", paper_layout(t, "bias_score")), (TABLE5_INTERVALS, table5_intervals(t))]
            out.append((TITLES["scores"], text, shown, "table5_bias_scores"))
        if "figure1_auc" in tables:
            text = (
                f"{READING} Score = the metric's per-pair margin f(stereo) − f(anti). The paper plots these curves for BERT and finds AUL "
                "and AULA above CPS and SSS; it prints no AUC values. AUC intervals: 95% stratified percentile bootstrap (2,000 "
                "resamples of the positive and negative pairs, seed 0)."
            )
            out.append((TITLES["agreement"], text, [("AUC", tables["figure1_auc"])], "figure1_roc"))
        return out

    def small_sample_notes(self) -> dict[str, list[str]]:
        """Per section (figure stem), one line for each cell that rests on few pairs.

        A note when a cell rests on fewer than `SMALL_PAIRS` (30) pairs, or (Figure 1) on
        fewer than `SMALL_CLASS` (10) pairs of a class: its interval is wide and it can
        move a lot with a different sample.
        """
        tables = self.tables()
        notes: dict[str, list[str]] = {}

        def add(stem: str, line: str) -> None:
            notes.setdefault(stem, [])
            if line not in notes[stem]:
                notes[stem].append(line)

        if "table1_token_accuracy" in tables:
            for c in (c for m in self.models for c in m.accuracy):
                if c.pairs < SMALL_PAIRS:
                    add("table1_token_accuracy", f"{c.model}, {c.dataset}: the accuracies rest on {c.pairs} pairs (fewer than {SMALL_PAIRS}).")
        if "table3_groups" in tables:
            t = tables["table3_groups"]
            run = t[(t["source"] == SOURCE_RUN) & (t["group"] != "diff")]
            for model, group, n in zip(run["model"], run["group"], run["n"]):
                if n == 0:  # not a small cell but an empty one: its scores are blank
                    add("table3_groups", f"{model}: no {GROUP_NAMES[group]} pairs in this sample, so its cells are blank.")
                elif n < SMALL_PAIRS:
                    add("table3_groups", f"{model}: the {GROUP_NAMES[group]} cells rest on {int(n)} pairs (fewer than {SMALL_PAIRS}).")
        if "table4_shuffle" in tables:
            for m in self.models:
                for key, tokens in m.token_tables.items():
                    if key.endswith("/tokens_shuffle") and tokens["pair_id"].nunique() < SMALL_PAIRS:
                        add(
                            "table4_shuffle",
                            f"{m.label}, {key.split('/')[0]}: the accuracies rest on {tokens['pair_id'].nunique()} pairs (fewer than {SMALL_PAIRS}).",
                        )
        if "table5_bias_scores" in tables:
            for line in table5_notes(tables["table5_bias_scores"]):
                add("table5_bias_scores", line)
        if "figure1_auc" in tables:
            for r in tables["figure1_auc"].itertuples():
                if r.pairs < SMALL_PAIRS or min(r.positives, r.negatives) < SMALL_CLASS:
                    add(
                        "figure1_roc",
                        f"{r.model}, {r.name}: the AUC rests on {r.pairs} pairs, {r.positives} rated biased and {r.negatives} "
                        f"not (fewer than {SMALL_PAIRS} pairs or {SMALL_CLASS} of a class).",
                    )
        return notes

    def warnings(self) -> list[str]:
        """One line per model whose numbers should not be read as a trained model's."""
        lines = []
        for m in self.models:
            if m.sanity is not None and m.sanity.status != "ok":
                lines.append(f"{m.label}: {m.sanity.message} Its rows are this run's numbers, not the paper's.")
        return lines

    def header_lines(self) -> list[str]:
        o = self.options
        selection = f"first {o.limit} pairs" if o.limit else f"a seeded sample of {o.sample} pairs (seed {o.seed})" if o.sample else "every pair"
        lines = [f"Created {self.created} by biaslens. Scoring mode: {o.compat}. Pairs: {selection} of each dataset."]
        for name, info in self.datasets.items():
            lines.append(f"Dataset {name}: {info['path']} (sha256 {info['sha256'][:12]}…, {info['pairs']:,} pairs).")
        for m in self.models:
            man = m.manifest
            sanity = f"; sanity check: {m.sanity.status}" if m.sanity is not None else ""
            lines.append(
                f"Model {m.label}: {man.get('model')} · {man.get('model_type')} · fingerprint {str(man.get('fingerprint'))[:12]} · "
                f"{man.get('device')} · {man.get('dtype')}{sanity}."
            )
        lines.append("Rows with source 'this run' are computed here; rows named '… (published)' are printed in Kaneko & Bollegala (2022).")
        return lines

    def markdown(self, figure_files: Mapping[str, str] | None = None) -> str:
        """The report as Markdown; `figure_files` maps figure stems to image paths to link."""
        # Lines that name datasets, files and models (a file named `<img src=…>`, a folder `[click](…)`) are escaped: a
        # markdown viewer shows them as text, never a live link or an image it fetches (`report.html` escapes them as HTML).
        parts = ["# Reproducing Kaneko & Bollegala (2022), *Unmasking the Mask*", ""]
        parts += [f"- {escape_markdown(line)}" for line in self.header_lines()] + [""]
        for w in self.warnings():
            parts += [f"> **Warning:** {escape_markdown(w)}", ""]
        notes = self.small_sample_notes()
        for title, text, shown, stem in self.sections():
            parts += [f"## {title}", "", text, ""]
            parts += [f"> **Small sample:** {escape_markdown(n)}" for n in notes.get(stem or "", [])] + ([""] if notes.get(stem or "") else [])
            for caption, frame in shown:
                parts += [f"**{caption}**", "", markdown_table(frame), ""]
            if figure_files and stem in figure_files:
                parts += [f"![{title}]({figure_files[stem]})", ""]
        return "\n".join(parts)

    def html(self, svgs: Mapping[str, str] | None = None) -> str:
        """The report as one self-contained HTML page; `svgs` maps figure stems to inline SVG text."""
        body = ["<h1>Reproducing Kaneko &amp; Bollegala (2022), <em>Unmasking the Mask</em></h1>", "<ul>"]
        body += [f"<li>{html.escape(line)}</li>" for line in self.header_lines()] + ["</ul>"]
        body += [f'<p class="warning"><strong>Warning:</strong> {html.escape(w)}</p>' for w in self.warnings()]
        notes = self.small_sample_notes()
        for title, text, shown, stem in self.sections():
            body += [f"<h2>{html.escape(title)}</h2>", f"<p>{html.escape(text)}</p>"]
            body += [f'<p class="warning"><strong>Small sample:</strong> {html.escape(n)}</p>' for n in notes.get(stem or "", [])]
            for caption, frame in shown:
                body += [f"<h3>{html.escape(caption)}</h3>", _html_table(frame)]
            if svgs and stem in svgs:
                body.append(f"<figure>{svgs[stem]}</figure>")
        return _HTML_PAGE.format(body="\n".join(body))

    # -- files ----------------------------------------------------------------------------
    def save(self, out_dir: str | Path) -> list[Path]:
        """Write the CSVs, figures, report.md, report.html, the runs and manifest.json; return the paths."""
        out = Path(out_dir)
        written = [atomic_write(out / f"{stem}.csv", safe_csv(frame)) for stem, frame in self.tables().items()]
        svgs = {stem: figures.to_svg(chart) for stem, chart in self.charts().items()}
        written += [atomic_write(out / "figures" / f"{stem}.svg", svg) for stem, svg in svgs.items()]
        written.append(atomic_write(out / "report.md", self.markdown({s: f"figures/{s}.svg" for s in svgs})))
        written.append(atomic_write(out / "report.html", self.html(svgs)))
        labels = short_file_names([m.label for m in self.models])
        # Folder names from the datasets' names, never a path (a pairs file's name may be one).
        tokens_of = [key.rpartition("/")[0] for m in self.models for key in m.token_tables]  # "<dataset>/tokens_accuracy"
        folders = short_file_names(list(dict.fromkeys([*self.datasets, *(name for m in self.models for name in m.evaluations), *tokens_of])))
        for m in self.models:
            folder = out / "runs" / labels[m.label]
            for name, result in m.evaluations.items():
                written += list(result.save(folder / folders[name]))
            for key, tokens in m.token_tables.items():
                dataset, _, table = key.rpartition("/")
                written.append(atomic_write(folder / folders[dataset] / f"{table}.csv", safe_csv(tokens)))
        manifest = {
            "created": self.created,
            "options": asdict(self.options),
            "datasets": self.datasets,
            "models": {m.label: {"manifest": m.manifest, "sanity": asdict(m.sanity) if m.sanity else None} for m in self.models},
        }
        written.append(atomic_write(out / "manifest.json", to_json(manifest)))
        return written


def zip_report(report: ReproductionReport, folder: str = "biaslens-report") -> bytes:
    """Everything `report.save` writes (CSVs, figures, report.md/.html, runs, manifest), as one zip archive under `folder/`."""
    import io
    import tempfile
    import zipfile

    buffer = io.BytesIO()
    with tempfile.TemporaryDirectory(prefix="biaslens-report-") as tmp:
        report.save(tmp)
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
            for path in sorted(Path(tmp).rglob("*")):
                if path.is_file():
                    archive.write(path, f"{folder}/{path.relative_to(tmp).as_posix()}")
    return buffer.getvalue()


def _group_run(model: ModelAnalyses) -> EvaluationResult | None:
    """The run Table 3 reads: CrowS-Pairs if scored, else the first run with Adv/Dis groups."""
    runs = sorted(model.evaluations.items(), key=lambda item: item[0] != "crows-pairs")
    for _name, result in runs:
        if any(block.get("by_group") for block in result.summary["metrics"].values()):
            return result
    return None


TABLE5_INTERVALS = "This run: each score with its pairs (n) and 95% Wilson interval"


def table5_intervals(table: pd.DataFrame) -> pd.DataFrame:
    """Table 5's own rows (from `bias_score_table`) with n, the 95% Wilson interval, ties and undecidable pairs."""
    run = table[table["source"] == SOURCE_RUN]
    return _counts(run[["model", "dataset", "metric", "n", "bias_score", "ci_low", "ci_high", "ties", "undecidable"]]).reset_index(drop=True)


def table5_notes(table: pd.DataFrame) -> list[str]:
    """One small-sample line per model and dataset whose bias scores rest on fewer than `SMALL_PAIRS` pairs."""
    lines: list[str] = []
    for r in table[table["source"] == SOURCE_RUN].itertuples():
        line = f"{r.model}, {r.dataset}: the bias scores rest on {int(r.n)} pairs (fewer than {SMALL_PAIRS})."
        if r.n < SMALL_PAIRS and line not in lines:
            lines.append(line)
    return lines


def _table2_chart_frame(mean_ranks: pd.DataFrame, merged: pd.DataFrame) -> pd.DataFrame:
    """Table 2's mean ranks with the columns `figures.word_rank_chart` reads (median position, the group's listed words)."""
    rows = []
    for r in mean_ranks.itertuples(index=False):
        own = merged[(merged["bias_type"] == r.bias_type) & (merged["group"] == r.group)]
        rows.append(
            {
                "bias_type": r.bias_type,
                "group": r.group,
                "mean_rank": r.mean_rank,
                "median_rank": pd.Series(own["position"], dtype=float).median(),
                "words": r.words_in_list,
                "top_words": ", ".join(own["word"]),
            }
        )
    return pd.DataFrame(rows).dropna(subset=["mean_rank"])


def _counts(frame: pd.DataFrame) -> pd.DataFrame:
    """Count columns (McNemar's b and c, seeds) as integers, not floats."""
    return frame.astype({c: "Int64" for c in ("mcnemar_b", "mcnemar_c", "seed", "n", "tokens", "ties", "undecidable") if c in frame})


def short_file_names(labels: Sequence[str]) -> dict[str, str]:
    """Folder-safe, distinct names for labels (models, datasets): letters, digits, `_`, `.` and `-`, never a path."""
    import re

    out: dict[str, str] = {}
    for label in labels:
        base = re.sub(r"[^A-Za-z0-9_.-]+", "_", label.strip("/")).strip("._") or "model"
        name, k = base, 2
        while name in out.values():
            name, k = f"{base}_{k}", k + 1
        out[label] = name
    return out


def _cell(value: Any, digits: int = 2) -> str:
    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, float):
        if abs(value) < 10**-digits and value != 0:
            return f"{value:.2e}"
        return f"{value:,.{digits}f}"
    return str(value)


def markdown_table(frame: pd.DataFrame, digits: int = 2) -> str:
    """A DataFrame as a GitHub Markdown table (floats with `digits` decimals, NaN blank); text cells and headers escaped
    (`escape_markdown`: | and markup, links, automatic links), numbers written as they are."""

    def esc(value: Any) -> str:
        return escape_markdown(value) if isinstance(value, str) else _cell(value, digits).replace("|", "\\|").replace("\n", " ")

    header = "| " + " | ".join(esc(str(c)) for c in frame.columns) + " |"
    rule = "| " + " | ".join("---" for _ in frame.columns) + " |"
    rows = ["| " + " | ".join(esc(v) for v in row) + " |" for row in frame.itertuples(index=False)]
    return "\n".join([header, rule, *rows])


def _html_table(frame: pd.DataFrame, digits: int = 2) -> str:
    cells = frame.map(lambda v: _cell(v, digits)) if len(frame) else frame
    return cells.to_html(index=False, escape=True, na_rep="", classes="table", border=0)


_HTML_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>biaslens: reproducing Kaneko &amp; Bollegala (2022)</title>
<style>
body{{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;max-width:1100px;margin:2rem auto;padding:0 1rem;color:#222;line-height:1.45}}
table{{border-collapse:collapse;margin:0.5rem 0 1.25rem 0;font-size:0.92rem}}
th,td{{border-bottom:1px solid #ddd;padding:4px 10px;text-align:right}} th{{background:#f4f4f4}}
td:first-child,th:first-child,td:nth-child(2),th:nth-child(2){{text-align:left}}
.warning{{background:#fff4e5;border-left:4px solid #D55E00;padding:0.6rem 0.8rem}}
figure{{margin:0.5rem 0 2rem 0}} svg{{max-width:100%;height:auto}}
</style></head><body>
{body}
</body></html>
"""


def build_report(
    models: Sequence[ModelAnalyses],
    datasets: Mapping[str, PairDataset],
    options: ReportOptions = ReportOptions(),
) -> ReproductionReport:
    """Gather analysed models into a report, with Table 2 from the datasets' first directed one."""
    info = {name: {"path": str(d.path), "sha256": d.sha256, "pairs": len(d)} for name, d in datasets.items()}
    frequency = None
    if "frequency" in options.analyses:
        directed = [d for d in datasets.values() if _needs_pairs_direction(d)]
        if directed:
            frequency = word_frequency(dataset_pairs(directed[0], **options.selection()))
    return ReproductionReport(options, list(models), info, frequency)


__all__ = [
    "ANALYSES",
    "DEFAULT_DATASETS",
    "ModelAnalyses",
    "REPORT_FILES",
    "ReportOptions",
    "ReproductionReport",
    "SMALL_CLASS",
    "SMALL_PAIRS",
    "TABLE5_INTERVALS",
    "TABLE_STEMS",
    "analyse_model",
    "build_report",
    "evaluation_metrics",
    "markdown_table",
    "report_files",
    "short_file_names",
    "table5_intervals",
    "table5_notes",
    "zip_report",
]
