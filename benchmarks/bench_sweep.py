"""The bias-lab sweep's speed: worker processes, and the default grid.

    python benchmarks/bench_sweep.py workers [--steps 300] [--cells 4] [--repeat 2] [--workers 1,2]
    python benchmarks/bench_sweep.py default [--workers 1]

* **workers**: a grid of `--cells` associations (ratio 1, seed 0) at `--steps` steps is trained
  from scratch (a fresh lab folder, no result cache) with each worker count in turn, `--repeat`
  times, alternating, so that a change of the machine's load hits every count alike. Prints
  the wall time of each run and the median speed-up over 1 worker.
* **default**: the default grid (`biaslens.lab.sweep.SweepGrid.default()`) from scratch, then
  again (everything found in the cache). Prints both wall times, the CPU count and the
  sweep's summary.md (its notes and the ranking, as a markdown table).

Nothing is written outside a temporary folder.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from biaslens import lab  # noqa: E402
from biaslens.lab import sweep  # noqa: E402


def _timed(grid: sweep.SweepGrid, models: Path, workers: int, cache: Path | bool) -> tuple[float, sweep.SweepResult]:
    start = time.perf_counter()
    result = sweep.run_sweep(grid, models_dir=models, workers=workers, result_cache=cache)
    return time.perf_counter() - start, result


def bench_workers(args: argparse.Namespace) -> None:
    counts = [int(w) for w in args.workers.split(",")]
    associations = [0.5 + 0.5 * i / max(1, args.cells - 1) for i in range(args.cells)]
    grid = sweep.SweepGrid(associations, (1.0,), (0,), replace_steps(args.steps))
    times: dict[int, list[float]] = {w: [] for w in counts}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.repeat):
            for w in counts:
                seconds, result = _timed(grid, Path(tmp) / f"w{w}-r{r}", w, False)
                assert len(result.cells) == len(grid) and all(c.trained_here for c in result.cells)
                times[w].append(seconds)
                print(f"run {r + 1}: {w} worker(s): {seconds:.1f} s for {len(grid)} cells", flush=True)
    base = statistics.median(times[counts[0]])
    for w in counts:
        print(f"{w} worker(s): median {statistics.median(times[w]):.1f} s, speed-up {base / statistics.median(times[w]):.2f}x")
    print(f"cpu_count {os.cpu_count()}, load average {os.getloadavg()}")


def replace_steps(steps: int) -> lab.LabSettings:
    from dataclasses import replace

    return replace(sweep.quick_recipe(), steps=steps)


def bench_default(args: argparse.Namespace) -> None:
    grid = sweep.SweepGrid.default()
    with tempfile.TemporaryDirectory() as tmp:
        cache = Path(tmp) / "results.sqlite"
        first, result = _timed(grid, Path(tmp) / "lab", args.workers, cache)
        again, _ = _timed(grid, Path(tmp) / "lab", args.workers, cache)
        print(f"default grid ({grid.describe()}), {args.workers} worker(s): {first:.0f} s from scratch, {again:.1f} s again (cached)")
        print(f"cpu_count {os.cpu_count()}, load average {os.getloadavg()}")
        print(sweep.summary_markdown(result, result.analysis()))  # the notes and the ranking as docs/lab.md's table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="what", required=True)
    w = sub.add_parser("workers")
    w.add_argument("--steps", type=int, default=300)
    w.add_argument("--cells", type=int, default=4)
    w.add_argument("--repeat", type=int, default=2)
    w.add_argument("--workers", default="1,2")
    d = sub.add_parser("default")
    d.add_argument("--workers", type=int, default=sweep.DEFAULT_WORKERS)
    args = parser.parse_args()
    bench_workers(args) if args.what == "workers" else bench_default(args)


if __name__ == "__main__":
    main()
