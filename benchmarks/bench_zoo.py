"""`zoo status` and `zoo merge` on a 3,000-cell store, and a zoo job's fixed cost on Slurm, one model a job and packed.

    python benchmarks/bench_zoo.py [--models 500] [--data-dir DIR] [--store DIR] [--rounds 5] [--baseline DIR]
                                   [--overhead] [--overhead-models 4] [--out benchmarks/results]

**Status and merge** (goal: each under 1 s, torch never imported). A synthetic store
(`biaslens.zoo.testing.synthetic_store(..., pinned=True)`: `--models` made-up models × CrowS-Pairs and StereoSet from
`--data-dir` (../shared/data here; the fixture files where it is missing) × AUL, CPS and SSS = 3,000 cells) and the plan
naming them (`synthetic_plan`). Each command runs as a user runs it, a new `python -m biaslens` process timed from start
to exit: `zoo status PLAN`, `zoo merge PLAN --output x.csv`, `zoo merge --store STORE --output y.csv`, `--rounds` times
after one warm-up (the store's index is built once, by the first merge). With `--baseline DIR` (another checkout, e.g.
`git archive main | tar -x -C /tmp/main`) each command also runs from it, alternating with this one, so that both
see the same load. A line of `python -c pass` and `python -c "import pandas"` gives the floor.

**A job's fixed cost** (`--overhead`; Slurm and munge installed, run as root: a single-node test cluster is started as
the tests start it, tests/support/slurm.py). `--overhead-models` tiny random BERTs (biaslens.engine.testing) on the fixture
CrowS-Pairs, AUL, scored on the cluster by `zoo run` into a fresh store: one model a job (`models_per_job = 1`), then all
in one job, alternating (twice each), one job at a time (`max_parallel = 1`, CPU only). Per job, from the jobs' own
records: the process before the model's work (interpreter, imports, submitit's unpickling), reading the datasets,
loading the model, scoring; the run's wall time from `zoo run`'s start to its end. The fixed cost per model is the
wall time less the scoring, over the models.

It is a benchmark: it reports, and never fails on a missed goal.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"  # benchmark inputs only; the product never reads it
sys.path.insert(0, str(REPO))

GOALS = {"status_s": 1.0, "merge_s": 1.0}
#: Run by a new interpreter: the command, then which heavy modules it imported (on stderr, last line).
WRAPPER = (
    "import sys; from biaslens.cli.main import main; code = main(sys.argv[1:]); "
    "print('imported:', *[m for m in ('torch', 'pandas') if m in sys.modules], file=sys.stderr); sys.exit(code)"
)


def make_store(path: Path, models: int, data_dir: Path) -> tuple[Path, Path, str]:
    """The pinned synthetic store and its plan (made once; kept at `path`)."""
    from biaslens.data.datasets import load_dataset
    from biaslens.zoo.testing import synthetic_plan, synthetic_store

    store, plan = path / "store", path / "plan.toml"
    if (store / "store.json").exists() and plan.exists():
        return store, plan, "reused"
    datasets = [load_dataset(name, data_dir=data_dir, download=False) for name in ("crows-pairs", "stereoset")]
    started = time.perf_counter()
    synthetic_store(store, datasets, models=models, pinned=True)
    synthetic_plan(plan, store, ["crows-pairs", "stereoset"], data_dir, models=models)
    return store, plan, f"made in {time.perf_counter() - started:.0f} s"


def timed(checkout: Path, argv: list[str]) -> tuple[float, str]:
    """Seconds a `python -m biaslens`-like process of `checkout` takes from start to exit; what heavy modules it imported."""
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", WRAPPER, *argv], capture_output=True, text=True, env=env, cwd=checkout, timeout=600)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed in {checkout}:\n{done.stderr[-2000:]}")
    imported = done.stderr.strip().splitlines()[-1].removeprefix("imported:").strip()
    return seconds, imported


def floor(rounds: int) -> dict[str, float]:
    out = {}
    for name, code in (("python -c pass", "pass"), ("python -c 'import pandas'", "import pandas")):
        times = []
        for _ in range(rounds):
            started = time.perf_counter()
            subprocess.run([sys.executable, "-c", code], check=True)
            times.append(time.perf_counter() - started)
        out[name] = round(statistics.median(times), 3)
    return out


def status_and_merge(store: Path, plan: Path, rounds: int, baseline: Path | None, scratch: Path) -> dict:
    commands = {
        "zoo status PLAN": ["zoo", "status", str(plan)],
        "zoo merge PLAN --output x.csv": ["zoo", "merge", str(plan), "--output", str(scratch / "x.csv")],
        "zoo merge --store STORE --output y.csv": ["zoo", "merge", "--store", str(store), "--output", str(scratch / "y.csv")],
    }
    sides = {"this checkout": REPO, **({"baseline": baseline} if baseline else {})}
    for checkout in sides.values():  # warm-up: the store's index, the file system's cache
        for argv in commands.values():
            timed(checkout, argv)
    times: dict[str, dict[str, list[float]]] = {name: {side: [] for side in sides} for name in commands}
    imported: dict[str, dict[str, str]] = {name: {} for name in commands}
    for _ in range(rounds):
        for name, argv in commands.items():
            for side, checkout in sides.items():  # alternating: both sides under the same load
                seconds, heavy = timed(checkout, argv)
                times[name][side].append(round(seconds, 3))
                imported[name][side] = heavy or "neither torch nor pandas"
    return {
        name: {
            side: {"median_s": round(statistics.median(ts), 3), "slowest_s": max(ts), "times_s": ts, "imported": imported[name][side]}
            for side, ts in by_side.items()
        }
        for name, by_side in times.items()
    }


def overhead(n_models: int, scratch: Path) -> dict:
    """A job's fixed cost on a single-node test cluster: n models one a job, then packed in one, alternating, twice."""
    from biaslens.engine.testing import build_random_model
    from biaslens.zoo.executors import ExecutorOptions, run_plan
    from biaslens.zoo.plan import load_plan
    from biaslens.zoo.store import ResultsStore
    from tests.support import slurm
    from tests.support.tiny_tokenizers import build_tiny_tokenizers, vocab_size
    from tests.zoo.conftest import plan_text

    why = slurm.missing()
    if why:
        return {"skipped": why}
    tokenizers = build_tiny_tokenizers(scratch / "tokenizers")
    folder = tokenizers["bert-cased"]
    models = [
        build_random_model("bert-cased", folder, scratch / f"bert-{i}", vocab_size=vocab_size("bert-cased", folder), seed=i) for i in range(n_models)
    ]
    cluster = slurm.start_cluster(scratch / "slurm")
    os.environ["SLURM_CONF"] = str(cluster.conf)
    rounds: list[dict] = []
    try:
        for attempt in range(2):
            for per_job in (1, n_models):
                name = f"run-{attempt}-{per_job}"
                path = scratch / f"{name}.toml"
                extra = f'metrics = ["aul"]\ndevice = "cpu"\n[slurm]\ncpus_per_job = 1\ntime = 30\nmax_parallel = 1\nmodels_per_job = {per_job}'
                path.write_text(plan_text([{"id": str(m)} for m in models], store=f"store-{name}", datasets='["crows-pairs"]', extra=extra))
                plan = load_plan(path)
                started = time.perf_counter()
                report = run_plan(plan, options=ExecutorOptions.from_plan(plan, "slurm"))
                wall = time.perf_counter() - started
                assert all(m.state == "done" for m in report.models), [(m.label, m.state, m.error) for m in report.models]
                store = ResultsStore(plan.store)
                timings = [(store.job(report.run_id, m.index, "worker") or {}).get("timing", {}) for m in report.models]
                scoring = sum(t.get("scoring_s", 0.0) for t in timings)
                rounds.append(
                    {
                        "models_per_job": per_job,
                        "jobs": len({m.job_ids[-1] for m in report.models}),
                        "wall_s": round(wall, 1),
                        "scoring_s": round(scoring, 1),
                        "fixed_per_model_s": round((wall - scoring) / n_models, 1),
                        "before_s": [t.get("before_s") for t in timings],
                        "datasets_s": [t.get("datasets_s") for t in timings],
                        "load_s": [t.get("load_s") for t in timings],
                    }
                )
    finally:
        cluster.stop()
    summary = {}
    for per_job in (1, n_models):
        mine = [r for r in rounds if r["models_per_job"] == per_job]
        summary[str(per_job)] = {
            "fixed_per_model_s": statistics.median(r["fixed_per_model_s"] for r in mine),
            "wall_s": statistics.median(r["wall_s"] for r in mine),
        }
    return {"models": n_models, "rounds": rounds, "summary": summary}


def write(out: Path, report: dict) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "zoo.json").write_text(json.dumps(report, indent=2) + "\n")
    lines = [
        f"# zoo status, zoo merge and a job's fixed cost ({report['when']})",
        "",
        f"Machine: {report['machine']['cores']} cores, load average {report['machine']['load_average_start']} at the start and "
        f"{report['machine']['load_average_end']} at the end (other work shares these cores). Python {report['machine']['python']}.",
        "",
    ]
    if "status_and_merge" in report:
        store = report["store"]
        lines += [
            "## zoo status and zoo merge on a 3,000-cell store (goal: under 1 s each, no torch)",
            "",
            f"A pinned synthetic store ({store['note']}): {store['models']} made-up models × {', '.join(store['datasets'])} × AUL, CPS, "
            f"SSS = {store['cells']:,} cells, and the plan naming them. Each command a new process, timed from start to exit, "
            f"{report['rounds']} rounds after a warm-up"
            + (", alternating with the baseline checkout (the same load for both)." if report.get("baseline") else "."),
            "",
        ]
        sides = list(next(iter(report["status_and_merge"].values())))
        lines.append("| command | " + " | ".join(f"{s}: median (s) | {s}: slowest (s) | {s}: imports" for s in sides) + " |")
        lines.append("| --- |" + " ---: | ---: | --- |" * len(sides))
        for name, by_side in report["status_and_merge"].items():
            cells = " | ".join(f"{v['median_s']} | {v['slowest_s']} | {v['imported']}" for v in by_side.values())
            lines.append(f"| `{name}` | {cells} |")
        lines += ["", "The floor on the same machine: " + ", ".join(f"`{k}` {v} s" for k, v in report["floor"].items()) + " (medians).", ""]
    if "overhead" in report:
        o = report["overhead"]
        lines += ["## A job's fixed cost on Slurm", ""]
        if "skipped" in o:
            lines.append(f"Not measured: {o['skipped']}.")
        else:
            lines += [
                f"{o['models']} tiny random BERTs on the fixture CrowS-Pairs (AUL) scored by `zoo run --executor slurm` on the single-node "
                "test cluster, one job at a time: one model a job, then all in one job, alternating, twice each.",
                "",
                "| models a job | jobs | wall (s) | scoring (s) | fixed cost per model (s) | each model: before its work (s) "
                "| datasets (s) | loading (s) |",
                "| ---: | ---: | ---: | ---: | ---: | --- | --- | --- |",
            ]
            for r in o["rounds"]:
                phases = " | ".join(", ".join(str(x) for x in r[k]) for k in ("before_s", "datasets_s", "load_s"))
                lines.append(f"| {r['models_per_job']} | {r['jobs']} | {r['wall_s']} | {r['scoring_s']} | {r['fixed_per_model_s']} | {phases} |")
            one, packed = o["summary"]["1"], o["summary"][str(o["models"])]
            lines += [
                "",
                f"Fixed cost per model (medians): {one['fixed_per_model_s']:.2f} s one model a job, {packed['fixed_per_model_s']:.2f} s with "
                f"{o['models']} a job ({one['fixed_per_model_s'] / max(packed['fixed_per_model_s'], 1e-9):.1f}x less).",
            ]
    (out / "zoo.md").write_text("\n".join(lines) + "\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", type=int, default=500)
    parser.add_argument("--data-dir", default=str(SHARED / "data"), help="a data folder with CrowS-Pairs and StereoSet (default ../shared/data)")
    parser.add_argument("--store", default=None, help="keep the synthetic store and its plan in this folder (made if missing)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--baseline", default=None, help="another checkout to run the same commands from, alternating")
    parser.add_argument("--skip-status", action="store_true", help="measure only the job's fixed cost")
    parser.add_argument("--overhead", action="store_true", help="measure a job's fixed cost on a single-node test cluster (root, Slurm)")
    parser.add_argument("--overhead-models", type=int, default=4)
    parser.add_argument("--out", default=str(REPO / "benchmarks" / "results"))
    args = parser.parse_args()
    from tests.support import FIXTURE_DATA

    data_dir = Path(args.data_dir) if (Path(args.data_dir) / "crows-pairs").is_dir() else FIXTURE_DATA
    report: dict = {
        "when": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "machine": {"cores": os.cpu_count(), "python": platform.python_version(), "load_average_start": round(os.getloadavg()[0], 2)},
        "rounds": args.rounds,
        "baseline": args.baseline,
        "goals": GOALS,
    }
    with tempfile.TemporaryDirectory() as tmp:
        scratch = Path(tmp)
        if not args.skip_status:
            keep = Path(args.store) if args.store else scratch / "zoo"
            store, plan, note = make_store(keep, args.models, data_dir)
            report["store"] = {
                "models": args.models,
                "datasets": ["crows-pairs", "stereoset"],
                "cells": args.models * 6,
                "note": note,
                "data_dir": str(data_dir),
            }
            report["floor"] = floor(args.rounds)
            report["status_and_merge"] = status_and_merge(store, plan, args.rounds, Path(args.baseline) if args.baseline else None, scratch)
        if args.overhead:
            report["overhead"] = overhead(args.overhead_models, scratch)
    report["machine"]["load_average_end"] = round(os.getloadavg()[0], 2)
    write(Path(args.out), report)
    print((Path(args.out) / "zoo.md").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
