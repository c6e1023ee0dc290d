"""The leaderboard with 500 models, in headless Chromium: first paint, page switches, filters, rank intervals.

    python benchmarks/bench_leaderboard.py [--models 500] [--data-dir DIR] [--store DIR] [--out benchmarks/results]

A results store of `--models` made-up models (`biaslens.zoo.testing.synthetic_store`: every family and size, made-up
per-pair scores, summaries computed as a real run's) × CrowS-Pairs and StereoSet from `--data-dir` (../shared/data here;
the hand-written fixture files where it is missing) × AUL, CPS and SSS: 500 × 2 × 3 = 3,000 cells of 1,508 or 2,106
pairs each. `--store` keeps it between runs (it is made once: about a minute and a half). The app is served as the
README starts it (`bash scripts/app.sh`, bench_browser.serve) with BIASLENS_ZOO_STORE set to the store, and measures:

* **first paint** (goal: <= 1 s): a click on Leaderboard in the sidebar, from the pair inspector with the model
  loaded, until the table is drawn (the grid on screen with its rows) and the page's script has finished: the app's
  page-switch measure (bench_browser.py), here with 500 models;
* **a new browser session** opening the leaderboard by link, until the table is drawn: the first visit after the
  server starts (the sidebar's model loads, the store's index is read from its file) apart from the next ones; beside
  them, a new session opening the model comparison (a page with no table), what any page's new session costs here;
* **changes**: the sort column, a family filter and a bias type, each until the script has finished;
* **rank intervals**: pressing Compute for one column (500 models' stored pairs read, 1,000 paired resamples).

It is a benchmark: it reports, and never fails on a missed goal.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"  # benchmark inputs only; the product never reads it
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from bench_browser import CHROMIUM, CHROMIUM_ARGS, HEADING_SHOWN, serve, wait_script_done, wait_until  # noqa: E402
from benchmarks.bench_engine import write_report  # noqa: E402

GOALS = {"first_paint_s": 1.0}
#: The leaderboard's table is drawn: the grid of the interactive table is on screen with its rows.
TABLE_DRAWN = """(rows) => {
    const grid = document.querySelector('[data-testid="stMain"] [data-testid="stDataFrame"]');
    if (!grid) return false;
    const canvas = grid.querySelector('canvas');
    const box = grid.getBoundingClientRect();
    return !!canvas && box.height > 100 && grid.querySelector('[aria-rowcount]')?.getAttribute('aria-rowcount') >= rows;
}"""


def make_store(path: Path, models: int, data_dir: Path) -> tuple[Path, str]:
    """The synthetic store (made once; kept at `path`); the datasets it holds."""
    from biaslens.data.datasets import load_dataset
    from biaslens.zoo.testing import synthetic_store

    if (path / "store.json").exists():
        return path, "reused"
    datasets = [load_dataset(name, data_dir=data_dir, download=False) for name in ("crows-pairs", "stereoset")]
    started = time.perf_counter()
    synthetic_store(path, datasets, models=models)
    return path, f"made in {time.perf_counter() - started:.0f} s"


def first_paint(browser, base: str, store: Path, models: int, timeout_ms: int) -> dict:
    """A new browser session opening the leaderboard by link: seconds until the table is drawn and until the script is done."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    page.set_default_timeout(timeout_ms)
    start = time.perf_counter()
    page.goto(f"{base}/leaderboard?store={store}")
    wait_until(page, TABLE_DRAWN, min(models, 10), timeout_ms)
    drawn = time.perf_counter() - start
    wait_script_done(page, timeout_ms)
    done = time.perf_counter() - start
    context.close()
    return {"table_drawn_s": round(drawn, 3), "script_done_s": round(done, 3)}


def new_session(browser, base: str, path: str, heading: str, timeout_ms: int) -> float:
    """A new browser session opening another page by link: seconds until its heading is shown and its script has finished."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    start = time.perf_counter()
    page.goto(f"{base}/{path}")
    wait_until(page, HEADING_SHOWN, heading, timeout_ms)
    wait_script_done(page, timeout_ms)
    seconds = round(time.perf_counter() - start, 3)
    context.close()
    return seconds


def switches(page, base: str, models: int, rounds: int, timeout_ms: int) -> list[dict]:
    rows = []
    for _ in range(rounds):
        page.locator('[data-testid="stSidebarNav"] a').filter(has_text=re.compile(r"Pair inspector$")).first.click()
        wait_until(page, HEADING_SHOWN, "Pair inspector", timeout_ms)
        wait_script_done(page, timeout_ms)
        start = time.perf_counter()
        page.locator('[data-testid="stSidebarNav"] a[href$="/leaderboard"]').first.click()
        wait_until(page, HEADING_SHOWN, "Leaderboard", timeout_ms)
        wait_until(page, TABLE_DRAWN, min(models, 10), timeout_ms)
        drawn = time.perf_counter() - start
        wait_script_done(page, timeout_ms)
        rows.append({"table_drawn_s": round(drawn, 3), "script_done_s": round(time.perf_counter() - start, 3)})
        print("switch", rows[-1], file=sys.stderr)
    return rows


def change(page, action, timeout_ms: int) -> float:
    start = time.perf_counter()
    action()
    page.wait_for_timeout(50)
    wait_script_done(page, timeout_ms)
    return round(time.perf_counter() - start, 3)


def pick(page, label: str, option: str) -> None:
    """Choose `option` in the select box or multiselect labelled `label`."""
    box = page.get_by_label(label, exact=True)
    box.click()
    page.get_by_role("option", name=option, exact=True).first.click()
    page.keyboard.press("Escape")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", type=int, default=500)
    parser.add_argument("--data-dir", default=str(SHARED / "data"), help="a data folder with CrowS-Pairs and StereoSet (default ../shared/data)")
    parser.add_argument("--store", default=None, help="keep the synthetic store here (made if missing)")
    parser.add_argument("--sessions", type=int, default=5, help="new browser sessions opening the leaderboard by link")
    parser.add_argument("--switch-rounds", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=180)
    parser.add_argument("--out", default=str(REPO / "benchmarks" / "results"))
    args = parser.parse_args()
    if not Path(CHROMIUM).exists():
        sys.exit(f"{CHROMIUM} is missing (apt-get install chromium)")
    data_dir = Path(args.data_dir)
    if not (data_dir.is_dir()):
        from tests.support import FIXTURE_DATA

        data_dir = FIXTURE_DATA

    import streamlit
    from playwright.sync_api import sync_playwright

    from biaslens.engine.testing import build_random_model

    timeout_ms = int(args.timeout * 1000)
    load_start = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        store, how = make_store(Path(args.store) if args.store else tmp / "store", args.models, data_dir)
        model = build_random_model("xlm-roberta", None, tmp / "models" / "tiny", size="tiny")  # the sidebar's model (any will do)
        env = {**os.environ, "BIASLENS_MODEL": str(model), "BIASLENS_MODEL_DIRS": str(model.parent), "BIASLENS_DATA_DIR": str(data_dir),
               "BIASLENS_ZOO_STORE": str(store), "BIASLENS_CACHE_DIR": str(tmp / "cache")}  # fmt: skip
        with serve(env, tmp / "server.log") as (base, started_s), sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            sessions, baseline = [], []
            for i in range(args.sessions):
                sessions.append(first_paint(browser, base, store, args.models, timeout_ms * (4 if i == 0 else 1)))
                print("session", i + 1, sessions[-1], file=sys.stderr)
                baseline.append(new_session(browser, base, "compare", "Model comparison", timeout_ms))
                print("baseline", baseline[-1], file=sys.stderr)
            context = browser.new_context(viewport={"width": 1400, "height": 1000})
            page = context.new_page()
            page.set_default_timeout(timeout_ms)
            page.goto(f"{base}/leaderboard?store={store}")
            wait_until(page, TABLE_DRAWN, 10, timeout_ms)
            wait_script_done(page, timeout_ms)
            switch_rows = switches(page, base, args.models, args.switch_rounds, timeout_ms)
            changes = {
                "sort by another column": change(page, lambda: pick(page, "Sort by", "stereoset · CPS"), timeout_ms),
                "a family filter": change(page, lambda: pick(page, "Family", "gpt2"), timeout_ms),
                "a bias type": change(page, lambda: pick(page, "Bias type", "gender"), timeout_ms),
            }
            print("changes", changes, file=sys.stderr)
            page.goto(f"{base}/leaderboard?store={store}")
            wait_until(page, TABLE_DRAWN, 10, timeout_ms)
            wait_script_done(page, timeout_ms)
            ranks = change(page, lambda: page.get_by_role("button", name="Compute rank intervals").click(), timeout_ms * 2)
            shown = page.get_by_text("paired resamples, and how often it kept its own rank").count() > 0
            print("rank intervals", ranks, shown, file=sys.stderr)
            context.close()
            browser.close()

    later = [s["table_drawn_s"] for s in sessions[1:]] or [sessions[0]["table_drawn_s"]]
    switch_drawn = [r["table_drawn_s"] for r in switch_rows]
    report = {
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "goals": GOALS,
        "store": {"models": args.models, "datasets": ["crows-pairs", "stereoset"], "metrics": ["aul", "cps", "sss"], "cells": args.models * 6,
                  "data_dir": "../shared/data" if data_dir == SHARED / "data" else str(data_dir), "how": how},
        "server_start_s": round(started_s, 2),
        "first_paint": {"rounds": switch_rows, "median_table_drawn_s": round(statistics.median(switch_drawn), 3),
                        "slowest_table_drawn_s": max(switch_drawn), "met": max(switch_drawn) <= GOALS["first_paint_s"]},
        "new_sessions": {"first_visit": sessions[0], "later": sessions[1:], "later_median_table_drawn_s": round(statistics.median(later), 3),
                         "model_comparison_s": baseline, "model_comparison_median_s": round(statistics.median(baseline), 3)},
        "changes_s": changes,
        "rank_intervals": {"seconds": ranks, "shown": shown},
        "machine": {"platform": platform.platform(), "cpu_count": os.cpu_count(), "load_average_start": round(load_start, 2),
                    "load_average_end": round(os.getloadavg()[0], 2)},
        "versions": {"python": platform.python_version(), "streamlit": streamlit.__version__},
    }  # fmt: skip
    print(write_report(args.out, "leaderboard", report, markdown))
    return 0


def markdown(report: dict) -> str:
    fp, ns, st = report["first_paint"], report["new_sessions"], report["store"]
    first = ns["first_visit"]
    return "\n".join(
        [
            f"# The leaderboard with {st['models']} models ({report['created']})",
            "",
            f"A synthetic results store (`biaslens.zoo.testing.synthetic_store`, {st['how']}): {st['models']} made-up models × "
            f"{', '.join(st['datasets'])} ({st['data_dir']}) × {', '.join(st['metrics'])} = {st['cells']:,} cells. The app served by "
            f"`bash scripts/app.sh` in headless Chromium, BIASLENS_ZOO_STORE set to the store. Machine: {report['machine']['cpu_count']} "
            f"cores, load average {report['machine']['load_average_start']} at the start and {report['machine']['load_average_end']} "
            "at the end (other work shares these cores).",
            "",
            f"## First paint (goal: table drawn <= {report['goals']['first_paint_s']} s)",
            "",
            "A click on **Leaderboard** in the sidebar, from the pair inspector with the model loaded, until the table is drawn with "
            f"its rows (and until the page's script has finished). Median {fp['median_table_drawn_s']} s, slowest "
            f"{fp['slowest_table_drawn_s']} s: **{'met' if fp['met'] else 'not met'}**.",
            "",
            "| round | table drawn (s) | script finished (s) |",
            "| --- | ---: | ---: |",
            *(f"| {i + 1} | {r['table_drawn_s']} | {r['script_done_s']} |" for i, r in enumerate(fp["rounds"])),
            "",
            "## A new browser session by link",
            "",
            "The leaderboard opened by link in a new browser session, until its table is drawn. A new session costs every page the "
            "app's own start (its scripts, the sidebar) and the table component's first load: the model comparison (no table) "
            "opened the same way is beside it.",
            "",
            "| session | leaderboard: table drawn (s) | script finished (s) | model comparison (s) |",
            "| --- | ---: | ---: | ---: |",
            f"| first after the server started (the sidebar's model loads; the store's index read from its file) | "
            f"{first['table_drawn_s']} | {first['script_done_s']} | {ns['model_comparison_s'][0]} |",
            *(
                f"| new session {i + 2} | {s['table_drawn_s']} | {s['script_done_s']} | {ns['model_comparison_s'][i + 1]} |"
                for i, s in enumerate(ns["later"])
            ),
            "",
            f"Medians of the later sessions: leaderboard {ns['later_median_table_drawn_s']} s, model comparison {ns['model_comparison_median_s']} s.",
            "",
            "## Changes (until the script has finished)",
            "",
            *(f"- {name}: {seconds} s" for name, seconds in report["changes_s"].items()),
            f"- rank intervals of one column ({st['models']} models' stored pairs, 1,000 paired resamples): "
            f"{report['rank_intervals']['seconds']} s (table shown: {report['rank_intervals']['shown']})",
            "",
        ]
    )


if __name__ == "__main__":
    sys.exit(main())
