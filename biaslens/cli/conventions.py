"""`biaslens conventions`: one model's bias score under every scoring convention, and the pairs whose verdict flips.

A causal model: every convention (default, lm-eval, bias-bench, oba2024) with every causal metric; a masked model: its
likelihood metrics (AUL, CPS, PLL, PLL-word-l2r). Writes conventions.csv (one row per scoring: bias score, interval, the
pairs that flip against the reference scoring, the convention's own statistics), flips.csv (every two scorings that share
a convention or a metric), pairs.csv (each pair's verdict under each scoring) and conventions.json
(`biaslens.analyses.conventions`).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from biaslens.cli.common import Progress, add_command, add_progress_arg, add_run_args, fmt, load, positive_int
from biaslens.engine.options import ModelSpec


def register(sub: Any) -> argparse.ArgumentParser:
    return add_command(sub, "conventions", cmd_conventions, add_conventions_arguments)


def add_conventions_arguments(p: Any) -> Any:
    from biaslens.engine.conventions import CONVENTIONS

    p.add_argument("--dataset", required=True, help="a dataset name (crows-pairs, stereoset, ...) or a path, as for evaluate")
    p.add_argument("--data-dir", default=None, help="folder searched (recursively) for the dataset files; else $BIASLENS_DATA_DIR")
    p.add_argument("--no-download", action="store_true", help="never download a dataset")
    p.add_argument("--conventions", default=None, help=f"comma-separated, from: {', '.join(CONVENTIONS)} (default: all; causal models)")
    p.add_argument("--metrics", default=None, help="comma-separated (default: a causal model's five; a masked model's aul,cps,pll,pll_word_l2r)")
    p.add_argument("--limit", type=positive_int, default=None, help="score only the first N pairs")
    p.add_argument("--sample", type=positive_int, default=None, help="score a seeded random sample of N pairs")
    p.add_argument("--seed", type=int, default=0, help="seed of --sample")
    add_run_args(p)
    p.add_argument("--out", required=True, help="output folder")
    add_progress_arg(p)
    return p


def cmd_conventions(args: argparse.Namespace) -> int:
    from biaslens.analyses.conventions import convention_sensitivity
    from biaslens.cli.evaluate import result_cache
    from biaslens.data.datasets import load_dataset
    from biaslens.data.export import atomic_write, safe_csv, to_json
    from biaslens.engine.conventions import CONVENTIONS
    from biaslens.engine.evaluation import select_pairs
    from biaslens.engine.metrics import parse_metrics
    from biaslens.engine.options import RunOptions
    from biaslens.errors import InputError
    from biaslens.data.export import check_output_dir

    check_output_dir(args.out, files=("conventions.csv", "flips.csv", "pairs.csv", "conventions.json"))  # (refused after scoring)
    conventions = [c.strip().lower() for c in args.conventions.split(",") if c.strip()] if args.conventions else None
    if unknown := [c for c in conventions or () if c not in CONVENTIONS]:
        raise InputError(f"Unknown convention {unknown[0]!r}: choose from {', '.join(CONVENTIONS)}.")
    metrics = parse_metrics(args.metrics) if args.metrics else None
    options = RunOptions(limit=args.limit, sample=args.sample, seed=args.seed, batch_tokens=args.batch_tokens)  # checked before loading
    spec = ModelSpec.from_args(args)
    dataset = load_dataset(args.dataset, data_dir=args.data_dir, download=not args.no_download)
    lm = load(spec)
    chosen = select_pairs(list(dataset.pairs), **options.selection())
    with Progress.from_args(args).pairs(len(chosen), f"{dataset.name} conventions") as bar:
        report = convention_sensitivity(
            lm, chosen, conventions=conventions, metrics=metrics, cache=result_cache(args), progress=bar, batch_tokens=args.batch_tokens
        )
    out = Path(args.out)
    written = [
        atomic_write(out / "conventions.csv", safe_csv(report.table)),
        atomic_write(out / "flips.csv", safe_csv(report.flips)),
        atomic_write(out / "pairs.csv", safe_csv(report.verdicts)),
        atomic_write(
            out / "conventions.json",
            to_json(
                {"manifest": report.manifest, "scorings": report.table.to_dict(orient="records"), "flips": report.flips.to_dict(orient="records")}
            ),
        ),
    ]
    print(table(report.table))
    flipped = sum(1 for flips in report.verdicts["flips"] if flips > 0)
    print(f"{flipped:,} of {len(report.verdicts):,} pairs change verdict between scorings (pairs.csv: column flips)", file=sys.stderr)
    print("wrote " + ", ".join(str(p) for p in written))
    return 0


def table(frame: Any) -> str:
    """conventions.csv as a text table."""
    width = max(len("scoring"), *(len(s) for s in frame["scoring"]))
    lines = [f"{'scoring':<{width}}  {'bias score':>10}  {'95% CI':<16}{'N':>6}  {'flips':>5}  {'vs':<{width}}  statistics"]
    for row in frame.to_dict(orient="records"):
        ci = f"[{fmt(row['ci_low'])}, {fmt(row['ci_high'])}]"
        head = f"{row['scoring']:<{width}}  {fmt(row['bias_score']):>10}  {ci:<16}{row['n']:>6}"
        lines.append(f"{head}  {row['flipped_vs_reference']:>5}  {row['reference']:<{width}}  {row['statistics']}".rstrip())
    return "\n".join(lines)


__all__ = ["add_conventions_arguments", "cmd_conventions", "register", "table"]
