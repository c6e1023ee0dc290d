"""`biaslens lab sweep`: train a grid of lab models and rank the metrics by how well they track the planted bias.

The engine is `biaslens.lab.sweep`; this module is only the command line around it.
"""

from __future__ import annotations

import argparse
import math
import sys
from typing import Any

from biaslens.errors import InputError
from biaslens.engine.runner import format_duration
from biaslens.cli.common import Progress, add_compat_arg, add_progress_arg, bounded_int, fmt
from biaslens.cli.lab_options import add_corpus_and_model_arguments, settings_from_args

#: The most worker processes a sweep starts (each trains one model on one thread).
MAX_WORKERS = 64


def _list(text: str, name: str) -> list[str]:
    items = [t.strip() for t in str(text).split(",") if t.strip()]
    if not items:
        raise InputError(f"{name} needs at least one value, e.g. {name} 0.5,0.75,1.")
    return items


def add_sweep_parser(lab_subparsers: Any) -> argparse.ArgumentParser:
    """Add `sweep` to the `lab` subcommands; returns its parser."""
    from biaslens import lab
    from biaslens.lab import sweep
    from biaslens.engine.metrics import MASKED_METRICS

    d = lab.LabSettings()
    p = lab_subparsers.add_parser(
        "sweep",
        help="train a grid of lab models (associations x frequency ratios x seeds) and rank the metrics by how well they track the planted bias",
    )
    p.add_argument(
        "--grid",
        default="default",
        choices=["default", "full"],
        help=f"default: associations {','.join(f'{a:g}' for a in sweep.DEFAULT_ASSOCIATIONS)} x ratios "
        f"{','.join(f'{r:g}' for r in sweep.DEFAULT_RATIOS)} x seeds {','.join(map(str, sweep.DEFAULT_SEEDS))} at "
        f"{sweep.QUICK_STEPS} steps / {sweep.QUICK_CORPUS} sentences; full: {','.join(f'{a:g}' for a in sweep.FULL_ASSOCIATIONS)} x "
        f"{','.join(f'{r:g}' for r in sweep.FULL_RATIOS)} x {len(sweep.FULL_SEEDS)} seeds at the lab's recipe "
        f"({d.steps} steps / {d.corpus_size} sentences). The options below override parts of it.",
    )
    p.add_argument("--associations", default=None, help="comma-separated association strengths between 0.5 (none) and 1, e.g. 0.5,0.7,0.85,1")
    p.add_argument("--ratios", default=None, help="comma-separated frequency ratios (group A k times as frequent as group B), e.g. 1,3,10")
    p.add_argument("--seeds", default=None, help="comma-separated training seeds, e.g. 0,1,2")
    p.add_argument("--corpus-size", type=int, default=None, help="training sentences per model (default: the grid's)")
    p.add_argument("--steps", type=int, default=None, help="training steps per model (default: the grid's)")
    add_corpus_and_model_arguments(p)
    p.add_argument(
        "--workers",
        type=bounded_int(1, MAX_WORKERS, "a number of workers"),
        default=sweep.DEFAULT_WORKERS,
        help=f"models trained at once, each in its own process (default {sweep.DEFAULT_WORKERS}; docs/lab.md gives the measured speed-up)",
    )
    p.add_argument("--metrics", default=None, help=f"comma-separated (default: every metric of --kind's models; masked: {' '.join(MASKED_METRICS)})")
    add_compat_arg(p)
    p.add_argument(
        "--models-dir", default=None, help="folder of the lab models (default <cache>/lab, cache = $BIASLENS_CACHE_DIR or ~/.cache/biaslens)"
    )
    p.add_argument("--no-cache", action="store_true", help="neither read nor write the result cache (the models are still cached)")
    p.add_argument("--out", required=True, help="write cells.csv, metrics.csv, sweep.json, dose_response.svg and summary.md here")
    add_progress_arg(p)
    p.set_defaults(func=cmd_lab_sweep)
    return p


def grid_from_args(args: argparse.Namespace) -> Any:
    """The sweep grid the options describe: the --grid preset, with the given parts replaced."""
    from dataclasses import replace

    from biaslens.lab import sweep

    preset = sweep.SweepGrid.full() if args.grid == "full" else sweep.SweepGrid.default()
    if args.workers < 1:
        raise InputError(f"--workers must be 1 or more, got {args.workers}.")
    # The lab's own parsing of words, templates, labels and model size (one scenario: its strengths are replaced per cell).
    words = argparse.Namespace(**vars(args), preset="neither", association=None, frequency_ratio=None, seed=0)
    words.corpus_size = args.corpus_size if args.corpus_size is not None else preset.base.corpus_size
    words.steps = args.steps if args.steps is not None else preset.base.steps
    (base,) = settings_from_args(words)
    return sweep.SweepGrid(
        _list(args.associations, "--associations") if args.associations is not None else preset.associations,
        _list(args.ratios, "--ratios") if args.ratios is not None else preset.ratios,
        _list(args.seeds, "--seeds") if args.seeds is not None else preset.seeds,
        replace(base, association=0.5, frequency_ratio=1.0, seed=0),
    )


def format_ranking(ranking: Any) -> str:
    """The ranking as a text table for the terminal ("—": no place, the metric has no verdict)."""
    from biaslens.lab.sweep import format_p, format_place, tracks_text

    width = max([26, *(len(tracks_text(r)) + 2 for r in ranking.itertuples())])
    lines = [f"{'':>3} {'metric':<13}{'tracks':<{width}}{'tau':>6}{'p':>9}{'slope':>7}{'false al.':>11}{'drift A':>9}{'seed sd':>9}"]
    for r in ranking.itertuples():
        alarms = "n/a" if math.isnan(r.false_alarm_rate) else f"{r.false_alarm_rate:.0%} of {r.false_alarm_models}"
        lines.append(
            f"{format_place(r.place):>3} {r.metric:<13}{tracks_text(r):<{width}}{fmt(r.tau):>6}{format_p(r.p_trend):>9}{fmt(r.slope, 1):>7}"
            f"{alarms:>11}{fmt(r.preference_drift, 1):>9}{fmt(r.seed_sd, 1):>9}"
        )
    return "\n".join(lines)


def cmd_lab_sweep(args: argparse.Namespace) -> int:
    from biaslens.lab import sweep
    from biaslens.data.export import check_output_dir
    from biaslens.report.sweep import OUTPUT_FILES, write_outputs

    grid = grid_from_args(args)
    check_output_dir(args.out, files=OUTPUT_FILES)  # a folder where a result file goes: refused before any training
    estimate = sweep.estimate_sweep(grid, models_dir=args.models_dir, workers=args.workers)
    print(f"Sweep: {grid.describe()}.", file=sys.stderr)
    print(f"Estimate: {estimate.text()}", file=sys.stderr)
    with Progress.from_args(args).bar(len(grid), "model", "sweep") as bar:

        def update(p: sweep.SweepProgress) -> None:
            bar.n = round(p.done + p.running, 2)
            left = "?" if p.seconds_left is None else format_duration(p.seconds_left)
            bar.set_postfix_str(f"trained {p.trained}, found {p.found}, about {left} left", refresh=False)
            bar.refresh()

        result = sweep.run_sweep(
            grid,
            models_dir=args.models_dir,
            metrics=args.metrics,
            compat=args.compat,
            result_cache=not args.no_cache,
            workers=args.workers,
            progress=update,
        )
    analysis = result.analysis()
    paths = write_outputs(result, args.out, analysis)
    print(
        f"{len(result.cells)} models ({sum(c.trained_here for c in result.cells)} trained now) in {result.seconds:.0f} s "
        f"with {result.workers} worker process{'es' if result.workers != 1 else ''}."
    )
    for note in analysis.notes():
        print(note)
    print(format_ranking(analysis.ranking))
    print(
        f"\ntracks = the exact trend test within each seed's curve (each point the exact mean over the same ratios at every "
        f"strength) gives p <= {sweep.ALPHA:g} (yes: tau > 0, inverted: tau < 0), on at least {sweep.MIN_STRENGTHS} strengths "
        f"in each of {sweep.MIN_SEEDS} seeds of models that learned. "
        "tau: Kendall's tau between planted association and bias score within curves; p: exact two-sided, the scores reordered "
        "within each seed's curve; slope: points per unit of association; false al.: association 0.5 and ratio > 1, share of models "
        "whose interval excludes 50; drift A: change of 'prefers group A' from ratio 1 to the largest ratio; seed sd: spread "
        "across seeds. See summary.md."
    )
    print("wrote " + ", ".join(str(p) for p in paths.values()))
    return 0
