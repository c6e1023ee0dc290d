"""Reopening a finished dataset run from the result cache: the engine, and the explorer page.

    python benchmarks/bench_reopen.py [--size tiny] [--repeat 3] [--out benchmarks/results]

A random-weight BERT (`--size`) with the real bert-base-cased tokenizer from
../shared/tokenizers scores all of CrowS-Pairs and StereoSet with the five paper metrics
into a fresh result cache (untimed). Then, for each dataset:

* **engine**: `biaslens.explore.cached_evaluation` (what the app calls to reopen a run:
  tokenization, cache keys, one read of the cache, the per-pair table and the summary),
  with a fresh `ResultCache` object each time;
* **page**: a new session of the app opening the dataset explorer on that run from a
  shared link (AppTest: the page's whole script, charts and tables included; the model is
  already loaded, as on a running server).

Each is timed `--repeat` times; the fastest and the median are reported, with the goal
(under 1 s) and the size of the cache file, which holds small per-pair records, never
attention tensors. Writes `reopen.json` and `reopen.md`. The benchmark fails (exit 1) if a
reopened result differs from the run that filled the cache.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
sys.path.insert(0, str(REPO))

from biaslens.cache import ResultCache  # noqa: E402
from biaslens.datasets import load_dataset  # noqa: E402
from biaslens.evaluation import evaluate  # noqa: E402
from biaslens.explore import cached_evaluation  # noqa: E402
from biaslens.metrics import PAPER_METRICS  # noqa: E402
from biaslens.models import load_model  # noqa: E402
from biaslens.testing import build_random_model  # noqa: E402

GOAL_S = 1.0
DATASETS = ("crows-pairs", "stereoset")


def timed(fn, repeat: int) -> tuple[list[float], object]:
    times, value = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        value = fn()
        times.append(time.perf_counter() - start)
    return times, value


def page_session(dataset: str):
    """A new app session opening the dataset explorer on the full run of `dataset` from a link."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=600)
    at.run()  # the home page first (AppTest reaches a st.navigation page only after a run)
    at.session_state["_url.out"] = {}
    at.query_params.clear()
    at.switch_page("pages/explorer.py")
    for key, value in {"dataset": dataset, "metrics": list(PAPER_METRICS), "metric": "aul"}.items():
        at.query_params[key] = value
    return at


def as_a_running_server() -> None:
    """AppTest starts each session in Streamlit's legacy pages-folder mode; a server leaves it on its first run."""
    from streamlit.runtime.pages_manager import PagesManager

    original = PagesManager.__init__

    def init(self, *args, **kwargs):
        original(self, *args, **kwargs)
        PagesManager.uses_pages_directory = False

    PagesManager.__init__ = init


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", default="tiny", choices=["tiny", "small", "base"])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", default=str(REPO / "benchmarks" / "results"))
    args = parser.parse_args()
    if not SHARED.is_dir():
        sys.exit("benchmarks need ../shared beside the checkout (tokenizers and data)")

    rows, ok = [], True
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        folder = build_random_model("bert-cased", SHARED / "tokenizers" / "bert-base-cased", tmp / "model", size=args.size)
        os.environ.update(
            BIASLENS_MODEL=str(folder), BIASLENS_CACHE_DIR=str(tmp / "cache"), BIASLENS_DATA_DIR=str(SHARED / "data"),
            BIASLENS_DATA_DIRS=str(SHARED / "data"),
        )  # fmt: skip
        as_a_running_server()
        lm = load_model(str(folder))
        cache_path = tmp / "cache" / "results.sqlite"
        for name in DATASETS:
            dataset = load_dataset(name, data_dir=SHARED / "data")  # the file the app finds
            print(f"scoring {name} ({len(dataset)} pairs, five metrics) into the cache…", file=sys.stderr)
            start = time.perf_counter()
            full = evaluate(lm, dataset, PAPER_METRICS, cache=ResultCache(cache_path))
            score_s = time.perf_counter() - start

            engine_s, again = timed(lambda: cached_evaluation(lm, dataset, PAPER_METRICS, ResultCache(cache_path)), args.repeat)
            same = again is not None and again.pairs.equals(full.pairs)

            page_session(name).run()  # warm-up: the model and the dataset are loaded once per server
            page_s, at = timed(lambda: page_session(name).run(), args.repeat)
            shown = [m.value for m in at.metric]
            want = [f"{full.summary['metrics'][m]['bias_score']:.1f}" for m in PAPER_METRICS]
            same = same and not at.exception and shown == want
            ok &= same
            rows.append({
                "dataset": name, "pairs": len(dataset), "score_s": round(score_s, 1),
                "engine_best_s": round(min(engine_s), 3), "engine_median_s": round(statistics.median(engine_s), 3),
                "page_best_s": round(min(page_s), 3), "page_median_s": round(statistics.median(page_s), 3),
                "identical": same,
            })  # fmt: skip
            print(rows[-1], file=sys.stderr)
        cache_mb = cache_path.stat().st_size / 1e6

    import streamlit
    import torch

    report = {
        "goal_s": GOAL_S, "model_size": args.size, "repeat": args.repeat, "cache_file_mb": round(cache_mb, 2),
        "machine": {"platform": platform.platform(), "cpu_count": os.cpu_count(), "threads": torch.get_num_threads(),
                    "load_average": os.getloadavg()[0] if hasattr(os, "getloadavg") else None},
        "versions": {"python": platform.python_version(), "torch": torch.__version__, "streamlit": streamlit.__version__},
        "results": rows,
    }  # fmt: skip
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "reopen.json").write_text(json.dumps(report, indent=2) + "\n")
    table = "\n".join("| " + " | ".join(map(str, row)) + " |" for row in [list(rows[0]), ["---"] * len(rows[0]), *(r.values() for r in rows)])
    (out / "reopen.md").write_text(
        f"# Reopening a finished run from the cache (goal: under {GOAL_S:g} s)\n\n"
        f"Five metrics, every pair; `{args.size}` random BERT; fastest and median of {args.repeat}; "
        f"cache file {cache_mb:.1f} MB for both datasets. Machine: {report['machine']}.\n\n{table}\n"
    )
    print(table)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
