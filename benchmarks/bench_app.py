"""The app's speed goals: inspecting one pair, and reopening a finished dataset run.

    python benchmarks/bench_app.py [--inspect-size base] [--reopen-size tiny] [--pairs 5] [--repeat 3] [--out benchmarks/results]

Random-weight BERTs with the real bert-base-cased tokenizer from ../shared/tokenizers, the
datasets from ../shared/data. Every page is timed as a new app session opened by a shared
link (AppTest runs the page's whole script, charts and tables included) on a server whose
model is already loaded, next to the engine call behind it.

* **inspect** (goal: under 2 s on a CPU, 0.5 s on a GPU), a `--inspect-size` model: for each
  of `--pairs` CrowS-Pairs pairs, each pair new to the server, the engine's `inspect_pair`
  as the inspector calls it (every paper metric, top-5 predictions, attention matrices) and
  the inspector page opened on that pair (`?pair=N`). Every page is checked to show the
  engine's AUL scores.
* **reopen** (goal: under 1 s), a `--reopen-size` model: all of CrowS-Pairs and StereoSet
  scored with the five metrics into a fresh result cache (untimed), then, `--repeat` times
  each, the engine's `biaslens.analyses.explore.cached_evaluation` (tokenization, cache keys, one
  read of the cache, the per-pair table and the summary) with a fresh `ResultCache`, and
  the dataset explorer opened on that run: first as the server's first session on it
  (`page_first_s`: the dataset loaded, the run read from the cache, flags computed), then
  `--repeat` times as later sessions (the server keeps the runs it read back and the flags).
  The cache file's size is reported: it holds small per-pair records, never attention tensors.

Fastest and median times are reported. Writes `app.json` and `app.md`; exits 1 if a page
shows other numbers than the engine.
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

from biaslens.engine.cache import ResultCache  # noqa: E402
from biaslens.data.datasets import load_dataset  # noqa: E402
from biaslens.engine.evaluation import evaluate, inspect_pair  # noqa: E402
from biaslens.analyses.explore import cached_evaluation  # noqa: E402
from biaslens.engine.metrics import PAPER_METRICS  # noqa: E402
from biaslens.engine.models import load_model  # noqa: E402
from biaslens.engine.testing import build_random_model  # noqa: E402
from tests.support.app import static_tables  # noqa: E402  (reads the page's static tables)

GOALS_S = {"inspect": {"cpu": 2.0, "cuda": 0.5}, "reopen": {"cpu": 1.0, "cuda": 1.0}}
DATASETS = ("crows-pairs", "stereoset")


def timed(fn) -> tuple[float, object]:
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, value


def best_and_median(times: list[float]) -> dict[str, float]:
    return {"best_s": round(min(times), 3), "median_s": round(statistics.median(times), 3)}


def open_page(page: str, params: dict):
    """A new app session opening `page` from a link with query `params` (the model is already loaded)."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=600)
    if page != "pages/inspector.py":
        at.run()  # AppTest reaches a st.navigation page only after a run on the home page
        at.session_state["_url.out"] = {}
        at.query_params.clear()
        at.switch_page(page)
    for key, value in params.items():
        at.query_params[key] = value
    return at.run()


def as_a_running_server() -> None:
    """AppTest starts each session in Streamlit's legacy pages-folder mode; a server leaves it on its first run."""
    from streamlit.runtime.pages_manager import PagesManager

    original = PagesManager.__init__

    def init(self, *args, **kwargs):
        original(self, *args, **kwargs)
        PagesManager.uses_pages_directory = False

    PagesManager.__init__ = init


def point_the_app_at(folder: Path, cache: Path) -> None:
    os.environ.update(
        BIASLENS_MODEL=str(folder), BIASLENS_MODEL_DIRS=str(folder.parent), BIASLENS_CACHE_DIR=str(cache),
        BIASLENS_DATA_DIR=str(SHARED / "data"), BIASLENS_DATA_DIRS=str(SHARED / "data"),
    )  # fmt: skip


def aul_shown(at) -> list[str]:
    """The AUL row of the inspector's sentence-score table: stereo and anti scores as shown (4 decimals)."""
    for frame in static_tables(at):
        if "Margin (stereo − anti)" in frame.columns:
            row = frame[frame["Metric"] == "AUL"].iloc[0]
            return [f"{row['Stereotypical']:.4f}", f"{row['Anti-stereotypical']:.4f}"]
    return []


def inspect(lm, pair):
    """What the pair inspector computes for a pair (ui.resources.inspection)."""
    return inspect_pair(lm, pair.sent_stereo, pair.sent_anti, metrics=PAPER_METRICS, top_k=5, attention_matrices=True)


def bench_inspect(folder: Path, tmp: Path, n_pairs: int) -> tuple[list[dict], bool]:
    point_the_app_at(folder, tmp / "cache-inspect")
    lm = load_model(str(folder))
    crows = load_dataset("crows-pairs", data_dir=SHARED / "data").pairs
    open_page("pages/inspector.py", {"pair": "0"})  # warm-up: model, dataset and the attention twin load once per server
    inspect(lm, crows[0])
    rows, ok = [], True
    for pair in crows[1 : 1 + n_pairs]:
        engine_s, result = timed(lambda p=pair: inspect(lm, p))
        page_s, at = timed(lambda p=pair: open_page("pages/inspector.py", {"pair": str(p.pair_id)}))
        same = not at.exception and aul_shown(at) == [f"{v:.4f}" for v in result.score("aul")]
        ok &= same
        rows.append({"pair_id": pair.pair_id, "tokens": len(lm.encode(pair.sent_stereo)), "engine_s": round(engine_s, 3),
                     "page_s": round(page_s, 3), "identical": same})  # fmt: skip
        print(rows[-1], file=sys.stderr)
    return rows, ok


def bench_reopen(folder: Path, tmp: Path, repeat: int) -> tuple[list[dict], float, bool]:
    cache_path = tmp / "cache-reopen" / "results.sqlite"
    point_the_app_at(folder, cache_path.parent)
    lm = load_model(str(folder))
    rows, ok = [], True
    for name in DATASETS:
        dataset = load_dataset(name, data_dir=SHARED / "data")  # the file the app finds
        print(f"scoring {name} ({len(dataset)} pairs, five metrics) into the cache…", file=sys.stderr)
        score_s, full = timed(lambda d=dataset: evaluate(lm, d, PAPER_METRICS, cache=ResultCache(cache_path)))

        engine = [timed(lambda d=dataset: cached_evaluation(lm, d, PAPER_METRICS, ResultCache(cache_path))) for _ in range(repeat)]
        same = all(again is not None and again.pairs.equals(full.pairs) for _, again in engine)

        link = {"dataset": name, "metrics": list(PAPER_METRICS), "metric": "aul"}
        first_s, _ = timed(lambda: open_page("pages/explorer.py", link))  # the server's first: dataset loaded, cache read
        pages = [timed(lambda: open_page("pages/explorer.py", link)) for _ in range(repeat)]
        want = [f"{full.summary['metrics'][m]['bias_score']:.1f}" for m in PAPER_METRICS]
        same = same and all(not at.exception and [m.value for m in at.metric] == want for _, at in pages)
        ok &= same
        rows.append({"dataset": name, "pairs": len(dataset), "score_s": round(score_s, 1),
                     **{f"engine_{k}": v for k, v in best_and_median([t for t, _ in engine]).items()},
                     "page_first_s": round(first_s, 3),
                     **{f"page_{k}": v for k, v in best_and_median([t for t, _ in pages]).items()},
                     "identical": same})  # fmt: skip
        print(rows[-1], file=sys.stderr)
    return rows, cache_path.stat().st_size / 1e6, ok


def table(rows: list[dict]) -> str:
    lines = [list(rows[0]), ["---"] * len(rows[0]), *(list(r.values()) for r in rows)]
    return "\n".join("| " + " | ".join(map(str, line)) + " |" for line in lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--inspect-size", default="base", choices=["tiny", "small", "base"])
    parser.add_argument("--reopen-size", default="tiny", choices=["tiny", "small", "base"])
    parser.add_argument("--pairs", type=int, default=5, help="CrowS-Pairs pairs inspected, each timed once")
    parser.add_argument("--repeat", type=int, default=3, help="timings of each reopened run")
    parser.add_argument("--out", default=str(REPO / "benchmarks" / "results"))
    args = parser.parse_args()
    if not SHARED.is_dir():
        sys.exit("benchmarks need ../shared beside the checkout (tokenizers and data)")
    as_a_running_server()

    import streamlit
    import torch

    device = "cuda" if torch.cuda.is_available() else "cpu"
    tokenizer = SHARED / "tokenizers" / "bert-base-cased"
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        inspect_rows, ok_inspect = bench_inspect(build_random_model("bert-cased", tokenizer, tmp / "inspect" / "model",
                                                                    size=args.inspect_size), tmp, args.pairs)  # fmt: skip
        reopen_rows, cache_mb, ok_reopen = bench_reopen(build_random_model("bert-cased", tokenizer, tmp / "reopen" / "model",
                                                                           size=args.reopen_size), tmp, args.repeat)  # fmt: skip

    goals = {k: v[device] for k, v in GOALS_S.items()}
    report = {
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "device": device, "goals_s": goals,
        "inspect": {"model_size": args.inspect_size, "summary": {
            "engine": best_and_median([r["engine_s"] for r in inspect_rows]),
            "page": best_and_median([r["page_s"] for r in inspect_rows])}, "pairs": inspect_rows},
        "reopen": {"model_size": args.reopen_size, "repeat": args.repeat, "cache_file_mb": round(cache_mb, 2), "datasets": reopen_rows},
        "machine": {"platform": platform.platform(), "cpu_count": os.cpu_count(), "threads": torch.get_num_threads(),
                    "load_average": os.getloadavg()[0] if hasattr(os, "getloadavg") else None},
        "versions": {"python": platform.python_version(), "torch": torch.__version__, "streamlit": streamlit.__version__},
    }  # fmt: skip
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "app.json").write_text(json.dumps(report, indent=2) + "\n")
    summary = report["inspect"]["summary"]
    markdown = (
        f"# The app's speed ({device}, {report['created']})\n\n"
        f"Machine: {report['machine']}. Every page is a new session opened from a link, the model already loaded.\n\n"
        f"## Inspecting one pair (goal: under {goals['inspect']:g} s)\n\n"
        f"`{args.inspect_size}` random BERT, every paper metric, top-5 predictions, attention matrices; each pair new to the "
        f"server. Engine (`inspect_pair`) fastest {summary['engine']['best_s']} s, median {summary['engine']['median_s']} s; "
        f"page fastest {summary['page']['best_s']} s, median {summary['page']['median_s']} s.\n\n{table(inspect_rows)}\n\n"
        f"## Reopening a finished run from the cache (goal: under {goals['reopen']:g} s)\n\n"
        f"Five metrics, every pair; `{args.reopen_size}` random BERT; the server's first session on the run "
        f"(`page_first_s`), then fastest and median of {args.repeat} later sessions; "
        f"cache file {cache_mb:.1f} MB for both datasets.\n\n{table(reopen_rows)}\n"
    )
    (out / "app.md").write_text(markdown)
    print(markdown)
    return 0 if ok_inspect and ok_reopen else 1


if __name__ == "__main__":
    sys.exit(main())
