"""Load without a browser (`python benchmarks/bench_load.py --mode threads`): sessions as threads on one cached model.

    python benchmarks/bench_load.py --mode threads [--size small] [--sessions 8] [--requests 6] [--dataset-pairs 96]
                                    [--batch-ms 20] [--data-dir DATA] [--tokenizers TOKENIZERS] [--out benchmarks/results]

A random-weight BERT (`--size`: tiny, small, base) with the real bert-base-cased tokenizer
from ../shared/tokenizers is loaded once through `biaslens.serving.server.ModelPool`, as the app
does, and shared by every thread. Each of `--sessions` sessions inspects its own CrowS-Pairs
pairs one after another, as the pair inspector does (every paper metric, top-5 tokens,
attention matrices), through the app's `InspectionBatcher` (`--batch-ms`; 0 = each
request scored alone in its own thread); at the same time one dataset run (`evaluate`, AUL + CPS, resumable
chunks into a fresh result cache) scores `--dataset-pairs` other pairs.

First everything runs alone, one request at a time (the single-user results and
latencies); then all at once. The benchmark fails (exit 1) unless every result under load
equals the single-user result (float32: |difference| <= 1e-5). It reports throughput and
latency percentiles alone and under load, as JSON and Markdown (`load-threads.json`, `.md`).
Numbers depend on the machine: note its cores and what else it was running.
"""

from __future__ import annotations

import os
import platform
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import torch

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from biaslens.engine.cache import ResultCache  # noqa: E402
from biaslens.data.datasets import load_dataset  # noqa: E402
from biaslens.engine.evaluation import evaluate, inspect_pair  # noqa: E402
from biaslens.engine.metrics import PAPER_METRICS  # noqa: E402
from biaslens.engine.models import load_model  # noqa: E402
from biaslens.serving.server import InspectionBatcher, ModelPool  # noqa: E402
from biaslens.engine.testing import build_random_model  # noqa: E402
from benchmarks.bench_engine import latency_percentiles, latency_text, write_report  # noqa: E402

TOLERANCE = 1e-5
RUN_METRICS = ["aul", "cps"]


def inspect(lm, pair, batcher: InspectionBatcher | None = None) -> np.ndarray:
    """One inspector request; its numbers (sentence scores, per-token log p and attention) as one vector."""
    options = {"metrics": PAPER_METRICS, "top_k": 5, "attention_matrices": True}
    if batcher is None:
        result = inspect_pair(lm, pair.sent_stereo, pair.sent_anti, **options)
    else:
        result = batcher.inspect(lm, pair.sent_stereo, pair.sent_anti, **options)
    parts = [result.summary_frame()[["stereo", "anti"]].to_numpy(dtype=float).ravel()]
    for side in (result.stereo, result.anti):
        parts.append(side.token_frame()[["logprob", "rank", "attention"]].to_numpy(dtype=float).ravel())
    return np.concatenate(parts)


def dataset_run(lm, pairs, cache_path: Path):
    return evaluate(lm, pairs, RUN_METRICS, cache=ResultCache(cache_path), chunk_pairs=32).pairs


def vector_diff(a: np.ndarray, b: np.ndarray) -> float:
    """Largest |a - b|; infinite if the shapes or the NaN positions differ."""
    if a.shape != b.shape or not np.array_equal(np.isnan(a), np.isnan(b)):
        return float("inf")
    return float(np.nanmax(np.abs(a - b), initial=0.0))


def frame_diff(a, b) -> float:
    if list(a.columns) != list(b.columns) or len(a) != len(b):
        return float("inf")
    cols = [c for c in a.columns if a[c].dtype.kind in "fi"]
    if not all(a[c].equals(b[c]) for c in a.columns if c not in cols):
        return float("inf")
    return vector_diff(a[cols].to_numpy(dtype=float), b[cols].to_numpy(dtype=float))


def main(args) -> int:
    """The thread-level benchmark with bench_load.py's arguments."""
    shared_tokenizer = Path(args.tokenizers) / "bert-base-cased"
    crows_file = Path(args.data_dir) / "crows-pairs" / "crows_pairs_anonymized.csv"
    for needed in (shared_tokenizer, crows_file):
        if not needed.exists():
            sys.exit(f"{needed} is missing: pass --data-dir and --tokenizers")
    batcher = InspectionBatcher(window_s=args.batch_ms / 1000)

    load_before = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        os.environ.setdefault("BIASLENS_CACHE_DIR", str(tmp / "cache"))
        folder = Path(args.model) if args.model else build_random_model("bert-cased", shared_tokenizer, tmp / "model", size=args.size)
        pool = ModelPool(1)
        lm = pool.get("model", lambda: load_model(str(folder)))
        crows = load_dataset(crows_file).pairs
        n_inspect = args.sessions * args.requests
        session_pairs = [crows[s * args.requests : (s + 1) * args.requests] for s in range(args.sessions)]
        run_pairs = crows[n_inspect : n_inspect + args.dataset_pairs]
        inspect(lm, crows[0])  # warm-up (the attention twin is built once)

        # -- alone: one request at a time ---------------------------------------------
        alone_latency, expected = [], {}
        started = time.perf_counter()
        for pairs in session_pairs:
            for pair in pairs:
                t = time.perf_counter()
                expected[pair.pair_id] = inspect(lm, pair)
                alone_latency.append(time.perf_counter() - t)
        alone_inspect_s = time.perf_counter() - started
        t = time.perf_counter()
        expected_run = dataset_run(lm, run_pairs, tmp / "alone.sqlite")
        alone_run_s = time.perf_counter() - t

        # -- under load: every session and the dataset run at once --------------------
        barrier = threading.Barrier(args.sessions + 1)
        got, load_latency, errors = {}, [], []
        run_out: dict[str, object] = {}
        lock = threading.Lock()

        def session(pairs):
            try:
                barrier.wait()
                for pair in pairs:
                    model = pool.get("model", lambda: load_model(str(folder)))  # as a page does, every request
                    t0 = time.perf_counter()
                    value = inspect(model, pair, batcher)
                    with lock:
                        load_latency.append(time.perf_counter() - t0)
                        got[pair.pair_id] = value
            except Exception as exc:  # reported, and the benchmark fails
                errors.append(repr(exc))

        def runner():
            try:
                barrier.wait()
                t0 = time.perf_counter()
                run_out["pairs"] = dataset_run(pool.get("model", lambda: load_model(str(folder))), run_pairs, tmp / "load.sqlite")
                run_out["s"] = time.perf_counter() - t0
            except Exception as exc:
                errors.append(repr(exc))

        threads = [threading.Thread(target=session, args=(p,)) for p in session_pairs] + [threading.Thread(target=runner)]
        started = time.perf_counter()
        for th in threads:
            th.start()
        for th in threads:
            th.join(timeout=3600)
        wall_s = time.perf_counter() - started
        hung = sum(th.is_alive() for th in threads)

    diff_inspect = max((vector_diff(got[k], v) for k, v in expected.items() if k in got), default=float("inf"))
    diff_run = frame_diff(run_out["pairs"], expected_run) if "pairs" in run_out else float("inf")
    ok = not errors and not hung and len(got) == len(expected) and max(diff_inspect, diff_run) <= TOLERANCE
    report = {
        "ok": ok,
        "errors": errors,
        "threads_alive_after_join": hung,
        "machine": {
            "cpu": platform.processor() or platform.machine(),
            "cores": os.cpu_count(),
            "torch_threads": torch.get_num_threads(),
            "device": str(lm.device),
            "python": platform.python_version(),
            "torch": torch.__version__,
            "load_average_1min_before": load_before,
        },  # fmt: skip
        "model": args.model or f"bert-{args.size} random weights, bert-base-cased tokenizer, float32",
        "batch_ms": args.batch_ms,
        "batch_group_sizes": batcher.group_sizes,
        "sessions": args.sessions,
        "requests_per_session": args.requests,
        "dataset_run_pairs": len(run_pairs),
        "max_abs_diff": {"inspections": diff_inspect, "dataset_run": diff_run, "tolerance": TOLERANCE},
        "alone": {
            "inspection_latency": latency_percentiles(alone_latency),
            "inspections_per_s": n_inspect / alone_inspect_s,
            "dataset_run_s": alone_run_s,
            "dataset_pairs_per_s": len(run_pairs) / alone_run_s,
        },
        "under_load": {
            "wall_s": wall_s,
            "inspection_latency": latency_percentiles(load_latency) if load_latency else None,
            "inspections_per_s": len(load_latency) / wall_s,
            "dataset_run_s": run_out.get("s"),
            "dataset_pairs_per_s": len(run_pairs) / run_out["s"] if "s" in run_out else None,
            "sequential_s": alone_inspect_s + alone_run_s,
        },
    }
    print(write_report(args.out, "load-threads", report, markdown))
    print(f"wrote {Path(args.out) / 'load-threads'}.json and .md")
    return 0 if ok else 1


def _groups(sizes: list[int]) -> str:
    return f"{len(sizes)}, mean size {sum(sizes) / len(sizes):.1f}" if sizes else "none"


def markdown(r: dict) -> str:
    a, u = r["alone"], r["under_load"]
    la, lu = a["inspection_latency"], u["inspection_latency"] or {}
    m = r["machine"]
    load = m.get("load_average_1min_before")
    lines = [
        f"# Load benchmark, sessions as threads ({'PASS' if r['ok'] else 'FAIL'})",
        "",
        f"{r['sessions']} sessions × {r['requests_per_session']} pair inspections (every paper metric, top-5, attention) "
        f"+ 1 dataset run of {r['dataset_run_pairs']} pairs (AUL, CPS), at once on one shared {r['model']}; "
        f"inspections arriving within {r['batch_ms']} ms share batches (groups: {_groups(r['batch_group_sizes'])}); "
        f"{m['device']}, {m['cores']} cores, {m['torch_threads']} torch threads, torch {m['torch']}"
        + (f", machine load average {load:.1f} before the run (other work shares these cores)." if load is not None else "."),
        "",
        "| | alone (one request at a time) | under load |",
        "| --- | --- | --- |",
        f"| inspection latency p50 / p90 / p99 / max (ms) | {latency_text(la)} | {latency_text(lu)} |",
        f"| inspections per second | {a['inspections_per_s']:.1f} | {u['inspections_per_s']:.1f} |",
        f"| dataset run (s) | {a['dataset_run_s']:.1f} | {u['dataset_run_s'] or float('nan'):.1f} |",
        f"| dataset pairs per second | {a['dataset_pairs_per_s']:.1f} | {u['dataset_pairs_per_s'] or float('nan'):.1f} |",
        "",
        f"Everything at once took {u['wall_s']:.1f} s (the same work one request at a time: {u['sequential_s']:.1f} s). "
        f"Largest difference from the single-user results: inspections {r['max_abs_diff']['inspections']:.1e}, "
        f"dataset run {r['max_abs_diff']['dataset_run']:.1e} (tolerance {r['max_abs_diff']['tolerance']:.0e}); "
        f"errors: {len(r['errors'])}; threads still running: {r['threads_alive_after_join']}.",
        "",
    ]
    return "\n".join(lines)
