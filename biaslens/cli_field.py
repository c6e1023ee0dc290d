"""Command-line pieces for the newer analyses: `compare` (two models, paired), and `evaluate`'s
`--stereoset-scores` (Nadeem et al.'s LMS / SS / ICAT) and `--flags` / `--exclude-flagged` (flagged rows).

`cli.py` registers them; the work is done by `biaslens.paired`, `biaslens.stereoset_scores` and
`biaslens.flags`.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import Any

import pandas as pd

from .errors import InputError


def _fmt(x: Any, digits: int = 2) -> str:
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{digits}f}"


def _checks(text: str | None) -> list[str]:
    from .flags import CHECKS

    if text is None or text.strip() in ("", "all"):
        return list(CHECKS)
    chosen = [c.strip().replace("-", "_") for c in text.split(",") if c.strip()]
    unknown = [c for c in chosen if c not in CHECKS]
    if unknown:
        raise InputError(f"Unknown flag check {', '.join(unknown)}: choose from {', '.join(CHECKS)} (or all).")
    return chosen


def add_evaluate_options(ev: argparse.ArgumentParser) -> None:
    ev.add_argument(
        "--stereoset-scores", action="store_true",
        help="also StereoSet's own LMS, SS and ICAT per bias type under each metric (intrasentence; scores the unrelated candidates)",
    )
    ev.add_argument(
        "--flags", nargs="?", const="all", default=None, metavar="CHECKS",
        help="flag pairs (non_minimal, blank_anomaly, duplicate, token_identical, published_non_minimal, removed_in_revision; "
        "default all) and show every metric with and without them; writes flags.csv and flagged.csv",
    )
    ev.add_argument("--exclude-flagged", action="store_true", help="pairs.csv and summary.json leave the flagged pairs out (implies --flags)")


def stereoset_report(args: argparse.Namespace, lm, dataset, result, cache, metrics: list[str], out: Path) -> dict:
    """Score StereoSet's three comparisons, print the table, write stereoset_scores.csv; the summary block."""
    from .export import atomic_write, safe_csv
    from .stereoset_scores import stereoset_scores, summary_block

    scores = stereoset_scores(
        lm, dataset, metrics, compat=args.compat, limit=args.limit, sample=args.sample, seed=args.seed, cache=cache,
        batch_tokens=args.batch_tokens, main=result,
    )
    atomic_write(out / "stereoset_scores.csv", safe_csv(scores.table))
    print("\nStereoSet (Nadeem et al. 2021), intrasentence: LMS, SS, ICAT (ideal 100, 50, 100)")
    print(f"{'metric':<14}{'bias type':<16}{'n':>6}{'LMS':>9}{'SS':>9}{'ICAT':>9}")
    for row in scores.table.itertuples(index=False):
        print(f"{row.metric:<14}{row.bias_type:<16}{row.n:>6}{_fmt(row.lms):>9}{_fmt(row.ss):>9}{_fmt(row.icat):>9}")
    if scores.skipped:
        print(f"note: {scores.skipped} examples have no unrelated sentence and are left out of LMS, SS and ICAT", file=sys.stderr)
    return summary_block(scores)


def flag_report(args: argparse.Namespace, lm, dataset, result, out: Path) -> tuple[pd.DataFrame, dict]:
    """Flag the scored pairs, print each metric with and without them, write flags.csv and flagged.csv."""
    from .export import atomic_write, safe_csv
    from .flags import CHECK_LABELS, flag_pairs, flag_summary, keep_mask
    from .paired import with_and_without

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
        print(f"{row.metric:<14}{_fmt(row.score_all):>9}{_fmt(row.score_kept):>11}{_fmt(row.difference):>9}   "
              f"[{_fmt(row.ci_low)}, {_fmt(row.ci_high)}]")
    block = {"checks": checks, "flagged": int((~keep).sum()), "notes": notes,
             "per_check": {r.check: int(r.pairs) for r in flag_summary(flags).itertuples(index=False)},
             "with_and_without": table.to_dict(orient="records")}
    return flags, block


def after_evaluate(args: argparse.Namespace, lm, dataset, result, cache, metrics: list[str]):
    """Run what `--stereoset-scores`, `--flags` and `--exclude-flagged` ask for; the result to save (maybe filtered)."""
    from .evaluation import EvaluationResult, summarize

    out = Path(args.out)
    extra: dict[str, Any] = {}
    if getattr(args, "stereoset_scores", False):
        extra["stereoset"] = stereoset_report(args, lm, dataset, result, cache, metrics, out)
    if getattr(args, "flags", None) is not None or getattr(args, "exclude_flagged", False):
        flags, extra["flags"] = flag_report(args, lm, dataset, result, out)
        if args.exclude_flagged:
            flagged = set(flags["pair_id"])
            kept = result.pairs[~result.pairs["pair_id"].isin(flagged)].reset_index(drop=True)
            if kept.empty:
                raise InputError("Every scored pair is flagged: nothing is left with --exclude-flagged.")
            manifest = {**result.summary["manifest"], "excluded_flagged": len(result.pairs) - len(kept)}
            result = EvaluationResult(kept, summarize(kept, metrics, manifest), result.warnings, result.cached)
    result.summary.update(extra)
    return result


# ---------------------------------------------------------------------------------------
# compare
# ---------------------------------------------------------------------------------------


def add_compare_command(sub, add_model_args, add_compat_arg, positive_int) -> None:
    from .metrics import PAPER_METRICS

    p = sub.add_parser("compare", help="two models on the same pairs: bias-score differences (paired bootstrap) and McNemar on verdicts")
    add_model_args(p, several=True)
    p.add_argument("--dataset", required=True, help="a named dataset or a pairs file")
    p.add_argument("--metrics", default=",".join(PAPER_METRICS))
    add_compat_arg(p)
    p.add_argument("--data-dir", default=None)
    p.add_argument("--limit", type=positive_int, default=None)
    p.add_argument("--sample", type=positive_int, default=None)
    p.add_argument("--seed", type=int, default=0, help="seed of --sample and of the bootstrap")
    p.add_argument("--resamples", type=positive_int, default=2000, help="bootstrap resamples (default 2000)")
    p.add_argument("--batch-tokens", type=positive_int, default=None)
    p.add_argument("--cache-dir", default=None)
    p.add_argument("--no-cache", action="store_true")
    p.add_argument("--no-download", action="store_true")
    p.add_argument("--out", default=None, help="write comparison.csv and comparison.json here")
    p.set_defaults(func=cmd_compare)


def cmd_compare(args: argparse.Namespace) -> int:
    from .cache import ResultCache
    from .datasets import load_dataset
    from .evaluation import evaluate
    from .export import atomic_write, safe_csv, to_json
    from .metrics import check_compat, parse_metrics
    from .models import load_model
    from .paired import paired_comparison

    models = args.model or []
    if len(models) != 2:
        raise InputError(f"compare needs exactly two models (--model A B), got {len(models)}.")
    metrics = parse_metrics(args.metrics)
    check_compat(args.compat)
    dataset = load_dataset(args.dataset, data_dir=args.data_dir, download=not args.no_download)
    for note in dataset.notes:
        print(f"note: {note}", file=sys.stderr)
    cache = None if args.no_cache else ResultCache(Path(args.cache_dir) / "results.sqlite" if args.cache_dir else None)
    results = []
    for name in models:
        print(f"Loading {name} ...", file=sys.stderr)
        lm = load_model(name, device=args.device, dtype=args.dtype, revision=args.revision, allow_pickle=args.allow_pickle,
                        device_map=args.device_map)
        print(f"Scoring {dataset.name} with {name} ...", file=sys.stderr)
        results.append(evaluate(lm, dataset, metrics, compat=args.compat, limit=args.limit, sample=args.sample, seed=args.seed,
                                cache=cache, batch_tokens=args.batch_tokens))
    table = paired_comparison(results[0], results[1], metrics, n_resamples=args.resamples, seed=args.seed)
    first, second = models
    print(f"\n{dataset.name}, {int(table['n'].iloc[0]):,} pairs. A = {first}, B = {second}. Difference = B − A (percentage points).")
    print(f"{'metric':<14}{'A':>8}{'B':>8}{'B − A':>9}   {'95% CI (paired bootstrap)':<27}{'McNemar b/c':>13}{'p':>10}")
    for row in table.itertuples(index=False):
        print(f"{row.metric:<14}{_fmt(row.score_first):>8}{_fmt(row.score_second):>8}{_fmt(row.difference):>9}   "
              f"{'[' + _fmt(row.ci_low) + ', ' + _fmt(row.ci_high) + ']':<27}{f'{row.mcnemar_b}/{row.mcnemar_c}':>13}"
              f"{row.p_value:>10.3g}")
    print("b: pairs only A calls stereotypical-preferred; c: only B. p: McNemar (exact binomial below 25 discordant pairs).")
    if args.out:
        out = Path(args.out)
        table = table.assign(model_first=first, model_second=second, dataset=dataset.name)
        csv_path = atomic_write(out / "comparison.csv", safe_csv(table))
        manifests = [r.manifest for r in results]
        atomic_write(out / "comparison.json", to_json({"models": [first, second], "dataset": dataset.name, "resamples": args.resamples,
                                                       "seed": args.seed, "comparison": table.to_dict(orient="records"),
                                                       "manifests": manifests}))
        print(f"wrote {csv_path} and {out / 'comparison.json'}")
    return 0


__all__ = ["add_compare_command", "add_evaluate_options", "after_evaluate", "cmd_compare"]
