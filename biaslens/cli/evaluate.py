"""`biaslens evaluate`: score a dataset; writes pairs.csv and summary.json (the contract scripts and the app rely on).

Also `--stereoset-scores` (Nadeem et al.'s LMS / SS / ICAT, `biaslens.stereoset_scores`) and
`--flags` / `--exclude-flagged` (flagged rows, `biaslens.flags`).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import sys
from pathlib import Path
from typing import Any

import pandas as pd

from ..errors import InputError, OutputError
from ..options import DEFAULT_DEVICE, DEFAULT_PRECISION, ModelSpec, Precision, RunOptions
from ..runner import DEFAULT_CHUNK_SECONDS
from .common import (
    COMMANDS,
    Progress,
    add_compat_arg,
    add_model_args,
    add_progress_arg,
    fmt,
    load,
    model_caveats,
    pair_texts,
    positive_int,
    progress_to,
)


def register(sub: Any) -> argparse.ArgumentParser:
    from ..metrics import METRICS, PAPER_METRICS

    ev = sub.add_parser("evaluate", help=COMMANDS["evaluate"])
    add_model_args(ev)
    ev.add_argument(
        "--dataset", required=True,
        help="crows-pairs, stereoset, crows-pairs-revised, crows-pairs-revised-210, crows-pairs-fr, crows-pairs-ja, crows-pairs-ru, winoqueer, "
        "or a path to a dataset / custom pairs CSV",
    )  # fmt: skip
    ev.add_argument(
        "--metrics",
        default=None,
        help=f"comma-separated, from: {' '.join(METRICS)} (default: {','.join(PAPER_METRICS)}, "
        "less any the model cannot give, e.g. AULA without attention weights)",
    )
    ev.add_argument("--out", required=True, help="output folder")
    add_compat_arg(ev)
    ev.add_argument("--data-dir", default=None, help="folder searched (recursively) for the dataset files; else $BIASLENS_DATA_DIR")
    ev.add_argument("--limit", type=positive_int, default=None, help="score only the first N pairs")
    ev.add_argument("--sample", type=positive_int, default=None, help="score a seeded random sample of N pairs")
    ev.add_argument("--seed", type=int, default=0, help="seed of --sample")
    ev.add_argument("--batch-tokens", type=positive_int, default=None, help="rows x padded length per forward pass")
    ev.add_argument(
        "--chunk-pairs",
        type=positive_int,
        default=None,
        help=f"pairs per resumable chunk (default: sized to about {DEFAULT_CHUNK_SECONDS:g} s of work on this device)",
    )
    ev.add_argument(
        "--precision",
        default=DEFAULT_PRECISION.value,
        choices=[p.value for p in Precision],
        help="model: compute in --dtype; exact-bf16 (a float32 model): score in bfloat16 and re-score in float32 the pairs whose "
        "margin is within bfloat16's error, for float32's verdicts and bias scores at about bfloat16's speed (meant for GPUs)",
    )
    ev.add_argument("--cache-dir", default=None, help="result cache folder (default $BIASLENS_CACHE_DIR or ~/.cache/biaslens)")
    ev.add_argument("--no-cache", action="store_true", help="neither read nor write the result cache")
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
    add_progress_arg(ev)
    ev.set_defaults(func=cmd_evaluate)
    return ev


def result_cache(args: argparse.Namespace):
    """The result cache --cache-dir / --no-cache ask for (None: off)."""
    from ..cache import ResultCache

    if args.no_cache:
        return None
    return ResultCache(Path(args.cache_dir) / "results.sqlite" if args.cache_dir else None)


def cmd_evaluate(args: argparse.Namespace) -> int:
    from .. import parallel
    from ..datasets import load_dataset
    from ..evaluation import evaluate, select_pairs

    run = RunOptions.from_args(args)
    spec = ModelSpec.from_args(args)
    if run.precision is Precision.EXACT_BF16 and spec.dtype != "float32":  # refused before the model loads
        raise InputError(f"--precision exact-bf16 re-scores in float32: load the model in float32 (leave out --dtype {spec.dtype}).")
    if args.flags is not None:
        _checks(args.flags)  # an unknown check is refused before the model loads
    progress = Progress.from_args(args)
    # Under `accelerate launch` (several processes) each process scores a share of the
    # pairs on its own device; the main process downloads first and writes the files.
    state = parallel.process_state(cpu=spec.device == "cpu")
    main = parallel.is_main_process(state)
    if state is not None and spec.device == DEFAULT_DEVICE:
        spec = spec.with_device(str(state.device))
    with state.main_process_first() if state is not None else contextlib.nullcontext():
        with progress.download(args.dataset) as bar:
            dataset = load_dataset(args.dataset, data_dir=args.data_dir, download=not args.no_download, progress=bar)
        if args.stereoset_scores:  # a dataset without unrelated sentences is refused before the model loads
            from ..stereoset_scores import with_unrelated

            with_unrelated(select_pairs(list(dataset.pairs), **run.selection()))
        lm = load(spec)
    caveats: dict[str, Any] = {}
    if main:
        for note in dataset.notes:
            print(f"note: {note}", file=sys.stderr)
        caveats = model_caveats(lm, pair_texts(select_pairs(list(dataset.pairs), **run.selection())))
    if args.metrics is None:  # the default set, less what this model cannot give (asked for by name, it is refused)
        from ..evaluation import available_metrics, unavailable_note

        keys, skipped = available_metrics(lm, list(run.metrics))
        if skipped:
            run = dataclasses.replace(run, metrics=tuple(keys))
            if main:
                print(f"note: {unavailable_note(skipped)}", file=sys.stderr)
    cache, said = result_cache(args), []
    if cache is not None:
        said = [w for w in (cache.notice, cache.warning) if w]  # said now, not only after the run
        for warning in said:
            print(f"warning: {warning}", file=sys.stderr)
    n = len(dataset)
    with progress.bar(min(n, run.limit or n, run.sample or n), "pair", f"{dataset.name} {','.join(run.metrics)}", disable=not main) as bar:
        result = evaluate(lm, dataset, run.metrics, cache=cache, progress=progress_to(bar), **run.evaluate_kwargs())
    if not main:
        parallel.finish(state)
        return 0
    result.summary["manifest"].update(caveats)
    scored, cached = len(result.pairs), result.cached  # (before --exclude-flagged leaves pairs out)
    result = after_evaluate(args, run, lm, dataset, result, cache)
    try:
        pairs_path, summary_path = result.save(args.out)
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
    if cached:
        metrics = f"{len(run.metrics)} metric{'s' if len(run.metrics) != 1 else ''}"
        print(f"{cached:,} of {scored * len(run.metrics):,} scores ({scored:,} pairs × {metrics}) came from the result cache", file=sys.stderr)
    if "precision" in result.summary["manifest"]:
        print(precision_line(result.summary["manifest"]["precision"]), file=sys.stderr)
    for warning in result.warnings:
        if warning not in said:
            print(f"warning: {warning}", file=sys.stderr)
    print(summary_table(result.summary))
    print(f"wrote {pairs_path} and {summary_path}")
    parallel.finish(state)
    return 0


def precision_line(block: dict) -> str:
    """An exact-bf16 run's pairs re-scored in float32, per metric, in one line (the manifest's `precision` block)."""
    from ..metrics import METRICS

    counts = ", ".join(f"{METRICS[m].name} {n:,}" for m, n in block["rescored"].items())
    return f"exact-bf16: scored in bfloat16; re-scored in float32 (margin within bfloat16's error), of {block['pairs']:,} pairs: {counts}"


def summary_table(summary: dict) -> str:
    """summary.json's metrics as a text table."""
    from ..metrics import METRICS

    lines = [f"{'metric':<11}{'bias score':>11}  {'95% CI (Wilson)':<17}{'N':>6}{'ties':>6}{'undecid.':>9}{'token acc.':>11}"]
    for key, block in summary["metrics"].items():
        ci = f"[{fmt(block['ci_low'])}, {fmt(block['ci_high'])}]"
        lines.append(
            f"{METRICS[key].name:<11}{fmt(block['bias_score']):>11}  {ci:<17}{block['n']:>6}{block['ties']:>6}"
            f"{block['undecidable']:>9}{fmt(block['token_accuracy']):>11}"
        )
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------
# --stereoset-scores, --flags, --exclude-flagged
# ---------------------------------------------------------------------------------------


def _checks(text: str | None) -> list[str]:
    from ..flags import CHECKS

    if text is None or text.strip() in ("", "all"):
        return list(CHECKS)
    chosen = [c.strip().replace("-", "_") for c in text.split(",") if c.strip()]
    unknown = [c for c in chosen if c not in CHECKS]
    if unknown:
        raise InputError(f"Unknown flag check {', '.join(unknown)}: choose from {', '.join(CHECKS)} (or all).")
    return chosen


def stereoset_report(run: RunOptions, lm, dataset, result, cache, out: Path) -> dict:
    """Score StereoSet's three comparisons, print the table, write stereoset_scores.csv; the summary block."""
    from ..export import atomic_write, safe_csv
    from ..stereoset_scores import stereoset_scores, summary_block

    scores = stereoset_scores(
        lm,
        dataset,
        run.metrics,
        compat=run.compat.value,
        **run.selection(),
        cache=cache,
        batch_tokens=run.batch_tokens,
        main=result,
    )
    atomic_write(out / "stereoset_scores.csv", safe_csv(scores.table))
    print("\nStereoSet (Nadeem et al. 2021), intrasentence: LMS, SS, ICAT (ideal 100, 50, 100)")
    print(f"{'metric':<14}{'bias type':<16}{'n':>6}{'LMS':>9}{'SS':>9}{'ICAT':>9}")
    for row in scores.table.itertuples(index=False):
        print(f"{row.metric:<14}{row.bias_type:<16}{row.n:>6}{fmt(row.lms):>9}{fmt(row.ss):>9}{fmt(row.icat):>9}")
    if scores.skipped:
        print(f"note: {scores.skipped} examples have no unrelated sentence and are left out of LMS, SS and ICAT", file=sys.stderr)
    return summary_block(scores)


def flag_report(args: argparse.Namespace, lm, dataset, result, out: Path) -> tuple[pd.DataFrame, dict]:
    """Flag the scored pairs, print each metric with and without them, write flags.csv and flagged.csv."""
    from ..export import atomic_write, safe_csv
    from ..flags import CHECK_LABELS, flag_pairs, flag_summary, keep_mask
    from ..paired import with_and_without

    checks = _checks(args.flags)
    flags, notes = flag_pairs(dataset, lm=lm, checks=checks, data_dir=args.data_dir, download=not args.no_download)
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    ids = list(result.pairs["pair_id"])
    flags = flags[flags["pair_id"].isin(set(ids))].reset_index(drop=True)
    keep = keep_mask(ids, flags)
    table = with_and_without(result, keep)
    atomic_write(out / "flags.csv", safe_csv(flags))
    atomic_write(out / "flagged.csv", safe_csv(table))
    print(f"\nFlagged pairs: {int((~keep).sum()):,} of {len(ids):,}")
    for row in flag_summary(flags).itertuples(index=False):
        print(f"  {row.pairs:>6,}  {CHECK_LABELS.get(row.check, row.check)}")
    print(f"{'metric':<14}{'all':>9}{'unflagged':>11}{'diff':>9}   95% CI (bootstrap)")
    for row in table.itertuples(index=False):
        print(f"{row.metric:<14}{fmt(row.score_all):>9}{fmt(row.score_kept):>11}{fmt(row.difference):>9}   [{fmt(row.ci_low)}, {fmt(row.ci_high)}]")
    block = {
        "checks": checks,
        "flagged": int((~keep).sum()),
        "notes": notes,
        "per_check": {r.check: int(r.pairs) for r in flag_summary(flags).itertuples(index=False)},
        "with_and_without": table.to_dict(orient="records"),
    }
    return flags, block


def after_evaluate(args: argparse.Namespace, run: RunOptions, lm, dataset, result, cache):
    """Run what `--stereoset-scores`, `--flags` and `--exclude-flagged` ask for; the result to save (maybe filtered)."""
    from ..evaluation import EvaluationResult, summarize

    out = Path(args.out)
    extra: dict[str, Any] = {}
    if getattr(args, "stereoset_scores", False):
        extra["stereoset"] = stereoset_report(run, lm, dataset, result, cache, out)
    if getattr(args, "flags", None) is not None or getattr(args, "exclude_flagged", False):
        flags, extra["flags"] = flag_report(args, lm, dataset, result, out)
        if args.exclude_flagged:
            flagged = set(flags["pair_id"])
            kept = result.pairs[~result.pairs["pair_id"].isin(flagged)].reset_index(drop=True)
            if kept.empty:
                raise InputError("Every scored pair is flagged: nothing is left with --exclude-flagged.")
            manifest = {**result.summary["manifest"], "excluded_flagged": len(result.pairs) - len(kept)}
            result = EvaluationResult(kept, summarize(kept, list(run.metrics), manifest), result.warnings, result.cached)
    result.summary.update(extra)
    return result


__all__ = ["after_evaluate", "cmd_evaluate", "flag_report", "precision_line", "register", "result_cache", "stereoset_report", "summary_table"]
