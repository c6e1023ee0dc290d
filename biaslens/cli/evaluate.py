"""`biaslens evaluate`: score a dataset; writes pairs.csv and summary.json (the contract scripts and the app rely on).

Argument parsing into an `EvaluationPlan`, one call of `biaslens.analyses.pipeline.run_evaluation` and printing; the
post-steps (`--stereoset-scores`: Nadeem et al.'s LMS / SS / ICAT; `--flags` / `--exclude-flagged`: flagged rows) are
registered in the pipeline (`STEPS`).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from biaslens.errors import OutputError
from biaslens.engine.options import DEFAULT_PRECISION, Precision
from biaslens.cli.common import COMMANDS, Progress, add_compat_arg, add_convention_arg, add_model_args, add_progress_arg, add_run_args, positive_int
from biaslens.cli.common import seed_int
from biaslens.cli.common import fmt, load, model_caveats


def register(sub: Any) -> argparse.ArgumentParser:
    from biaslens.engine.metrics import CAUSAL_METRICS, METRICS, PAPER_METRICS

    ev = sub.add_parser("evaluate", help=COMMANDS["evaluate"])
    add_model_args(ev)
    ev.add_argument(
        "--dataset", required=True,
        help="crows-pairs, stereoset, crows-pairs-revised, crows-pairs-revised-210, crows-pairs-fr, crows-pairs-ja, crows-pairs-ru, winoqueer, "
        "or a path to a dataset / custom pairs CSV; multiple choice: bbq (bbq-ambig, bbq-age, ...), winogender (winogender-gotcha, ...), "
        "a BBQ category file or a folder of them, a folder of Winogender's files",
    )  # fmt: skip
    ev.add_argument(
        "--metrics",
        default=None,
        help=f"comma-separated, from: {' '.join(METRICS)} (default: {','.join(PAPER_METRICS)} for a masked model, "
        f"{','.join(CAUSAL_METRICS)} for a causal one, less any the model cannot give, e.g. AULA without attention weights)",
    )
    ev.add_argument("--out", required=True, help="output folder")
    add_compat_arg(ev)
    add_convention_arg(ev)
    ev.add_argument(
        "--peer-pairs",
        action="store_true",
        help="with --convention oba2024: score only the pairs its own code scores (Oba et al.'s notebook: CrowS-Pairs' gender pairs); "
        "without it every pair is scored and their statistics over those pairs are printed beside",
    )
    ev.add_argument("--data-dir", default=None, help="folder searched (recursively) for the dataset files; else $BIASLENS_DATA_DIR")
    ev.add_argument("--limit", type=positive_int, default=None, help="score only the first N pairs")
    ev.add_argument("--sample", type=positive_int, default=None, help="score a seeded random sample of N pairs")
    ev.add_argument("--seed", type=seed_int, default=0, help="seed of --sample")
    add_run_args(ev, chunks="pairs")
    ev.add_argument(
        "--precision",
        default=DEFAULT_PRECISION.value,
        choices=[p.value for p in Precision],
        help="model: compute in --dtype; bf16-rescore (a float32 model, meant for GPUs): score in bfloat16 and re-score in float32 the "
        "pairs whose margin is within a calibrated estimate of bfloat16's error; not exact (the other pairs keep bfloat16's verdict)",
    )
    ev.add_argument("--no-download", action="store_true", help="never download a dataset")
    ev.add_argument(
        "--stereoset-scores",
        action="store_true",
        help="also StereoSet's own LMS, SS and ICAT per bias type under each metric (intrasentence; scores the unrelated candidates)",
    )
    ev.add_argument(
        "--flags",
        nargs="?",
        const="all",
        default=None,
        metavar="CHECKS",
        help="flag pairs (non_minimal, blank_anomaly, duplicate, token_identical, published_non_minimal, removed_in_revision; "
        "default all) and show every metric with and without them; writes flags.csv and flagged.csv",
    )
    ev.add_argument("--exclude-flagged", action="store_true", help="pairs.csv and summary.json leave the flagged pairs out (implies --flags)")
    ev.add_argument(
        "--controls",
        action="store_true",
        help="also score control pairs (the group words swapped for non-social words of matched frequency and part of speech; "
        "Pikuliak et al. 2023) and show each metric's control score beside its bias score (it should be near 50); writes "
        "controls.csv and control_swaps.csv; English datasets",
    )
    ev.add_argument("--control-seed", type=int, default=0, help="seed of the control words' draw (default 0)")
    ev.add_argument(
        "--mlm-bias",
        action="store_true",
        help="also mlm-bias's CRR, CRRA, ΔP and ΔPA (Zalkikar & Chandra; one masked copy per token, as its package scores them); "
        "writes mlm_bias.csv and mlm_bias_scores.csv",
    )
    ev.add_argument(
        "--mlm-bias-batched",
        action="store_true",
        help="--mlm-bias as the package's default batching=True path (the shorter sentence's attention averaged over its padding)",
    )
    add_progress_arg(ev)
    ev.set_defaults(func=cmd_evaluate)
    return ev


def result_cache(args: argparse.Namespace):
    """The result cache --cache-dir / --no-cache ask for (None: off)."""
    from biaslens.engine.cache import ResultCache

    if args.no_cache:
        return None
    return ResultCache(Path(args.cache_dir) / "results.sqlite" if args.cache_dir else None)


def cmd_evaluate(args: argparse.Namespace) -> int:
    from biaslens.analyses.pipeline import EvaluationPlan, run_evaluation
    from biaslens.cli import choices
    from biaslens.data.export import check_output_dir

    if choices.is_choice_dataset(args.dataset):  # BBQ, Winogender: items, not pairs
        cache = result_cache(args)
        for warning in (cache.notice, cache.warning) if cache is not None else ():
            if warning:
                print(f"warning: {warning}", file=sys.stderr)
        return choices.run(args, cache)
    plan = EvaluationPlan.from_args(args)  # refused here, before the dataset or the model loads
    check_output_dir(args.out, files=plan.output_files())  # (a folder named pairs.csv in --out: refused after scoring)
    cache, said = result_cache(args), []
    if cache is not None:
        said = [w for w in (cache.notice, cache.warning) if w]  # said now, not only after the run
        for warning in said:
            print(f"warning: {warning}", file=sys.stderr)
    run = run_evaluation(
        plan,
        cache=cache,
        progress=Progress.from_args(args),
        caveats=model_caveats,
        say=lambda note: print(f"note: {note}", file=sys.stderr),
        load=load,
    )
    if not run.main:
        run.finish()
        return 0
    try:
        pairs_path, summary_path = run.save(args.out)
    except OutputError as exc:
        kept = (
            (
                f"the scores are kept in the result cache ({cache.path}): run the same command with a writable --out to write them "
                "without scoring again"
            )
            if cache is not None and cache.warning is None
            else "the scores were not cached (--no-cache or cache off)"
        )
        raise OutputError(f"{str(exc).rstrip('.')}; {kept}.") from None
    for output in run.steps.values():
        print("\n".join(output.lines))
    metrics = run.options.metrics
    if run.cached:
        counted = f"{len(metrics)} metric{'s' if len(metrics) != 1 else ''}"
        print(
            f"{run.cached:,} of {run.scored * len(metrics):,} scores ({run.scored:,} pairs × {counted}) came from the result cache", file=sys.stderr
        )
    if "precision" in run.result.summary["manifest"]:
        print(precision_line(run.result.summary["manifest"]["precision"]), file=sys.stderr)
    for warning in run.warnings:
        if warning not in said:
            print(f"warning: {warning}", file=sys.stderr)
    print(summary_table(run.result.summary))
    if "convention" in run.result.summary:
        print(convention_line(run.result.summary["convention"]))
        if peer := run.result.summary["convention"].get("peer_pairs"):
            print(peer_pairs_line(peer))
    print(f"wrote {', '.join(p.name for p in run.written or [pairs_path, summary_path])} in {pairs_path.parent}")
    run.finish()
    return 0


def precision_line(block: dict) -> str:
    """A bf16-rescore run's pairs re-scored in float32, per metric, in one line (the manifest's `precision` block)."""
    from biaslens.engine.metrics import METRICS

    counts = ", ".join(f"{METRICS[m].name} {n:,}" for m, n in block["rescored"].items())
    return (
        f"bf16-rescore: scored in bfloat16; re-scored in float32 (margin within bfloat16's calibrated error), of {block['pairs']:,} pairs: "
        f"{counts}; not exact: the other pairs keep bfloat16's verdict"
    )


def convention_line(block: dict) -> str:
    """A convention's own statistics, as the peer reports them (summary.json's `convention` block), in one line."""
    from biaslens.engine.metrics import METRICS

    # Rounded for reading (acc 0.4695, not 0.46949602122015915); summary.json keeps every digit.
    rounded = lambda v: (fmt(v) if abs(v) >= 1 else fmt(v, 4)) if isinstance(v, float) else v  # noqa: E731
    stats = ", ".join(f"{k} {rounded(v)}" for k, v in (block.get("statistics") or {}).items())
    return f"{block['name']} ({block['key']}, {METRICS[block['metric']].name}, first token: {block['first_token']}): {stats}"


def peer_pairs_line(block: dict) -> str:
    """The pairs a convention's own code scores (the `peer_pairs` of its block): the note, and its statistics over them."""
    stats = block.get("statistics")
    shown = ", ".join(f"{k} {fmt(v) if isinstance(v, float) and abs(v) >= 1 else v}" for k, v in stats.items()) if stats else ""
    return block["note"] + (f" Over those {block['pairs']:,} pairs: {shown}." if shown else "")


def summary_table(summary: dict) -> str:
    """summary.json's metrics as a text table."""
    from biaslens.engine.metrics import METRICS

    from biaslens.analyses.controls import control_text
    from biaslens.data.export import text_table

    controls = any("controls" in block for block in summary["metrics"].values())
    rows = [
        [
            METRICS[key].name,
            fmt(block["bias_score"]),
            f"[{fmt(block['ci_low'])}, {fmt(block['ci_high'])}]",
            block["n"],
            block["ties"],
            block["undecidable"],
            fmt(block["token_accuracy"]),
            *([control_text(block.get("controls"))] if controls else []),
        ]
        for key, block in summary["metrics"].items()
    ]
    header = ["metric", "bias score", "95% CI (Wilson)", "N", "ties", "undecid.", "token acc."]
    table = text_table(header + (["control pairs [95% CI]"] if controls else []), rows)
    if controls:
        table += "\ncontrol pairs: the group words swapped for non-social ones; near 50 expected, 'off 50' when the interval excludes it"
    return table


__all__ = ["cmd_evaluate", "convention_line", "peer_pairs_line", "precision_line", "register", "result_cache", "summary_table"]
