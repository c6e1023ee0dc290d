"""Load: many people in their browsers inspecting pairs while a dataset run goes on, on one app server.

    python benchmarks/bench_load.py [--sessions 8 32] [--requests 3] [--dataset-pairs 100] [--size small | --model FOLDER]
                                    [--batch-ms 20 0] [--data-dir DATA] [--tokenizers TOKENIZERS] [--app-sh]
                                    [--out benchmarks/results]
    python benchmarks/bench_load.py --mode threads ...   # the same load as threads in one process, no server, no browser

The app is served as the README says (`BIASLENS_MODEL`, `BIASLENS_DATA_DIR`, `BIASLENS_CACHE_DIR` set;
`streamlit run app.py --server.port P --server.headless true`, which is what `bash scripts/app.sh`
runs after its setup step; `--app-sh` starts it through app.sh itself) and driven from headless
Chromium (/usr/bin/chromium, through playwright), one browser context per session, so every
session is a real Streamlit session with its own websocket.

For each `--batch-ms` value (the server's BIASLENS_INSPECT_BATCH_MS: inspections arriving within
that many ms share batched passes; 0 = each alone), a fresh server is started, then:
1. *One user*: one session opens `--requests` CrowS-Pairs pairs in the pair inspector, one after
   another, nothing else running.
2. *Under load*, for each `--sessions` count: one session starts a dataset run (explorer, AUL +
   CPS, `--dataset-pairs` pairs); once it is scoring, every session opens its own `--requests`
   pairs one after another, all sessions at once.
Every session first opens the inspector (on a pair already scored); then an inspection is picking
the next pair in the page's Pair box, as a user does, and its latency runs from the click on the
pair to the page showing that pair's sentence-scores table. Every pair is new to the server (no cached inspection). Every number in every
table is read off the page and compared with `inspect_pair` on the same model in this process
(equal to the table's 4 decimals; verdicts identical). The benchmark fails (exit 1) on any error,
difference or hang. It writes `load.json` and `load.md` in `--out`.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import platform
import re
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path


REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchmarks.bench_engine import latency_percentiles, latency_text, write_report  # noqa: E402
from tests.support.browser import CHROMIUM, CHROMIUM_ARGS, wait_until_healthy  # noqa: E402

#: Scores are shown with 4 decimals: a page value may differ from the engine's by half a unit in the last place.
SHOWN = 0.5e-4 + 1e-6
TIMEOUT_MS = int(os.environ.get("BIASLENS_BENCH_TIMEOUT_MS", 600_000))
VERBOSE = bool(os.environ.get("BIASLENS_BENCH_VERBOSE"))


def parse_args() -> argparse.Namespace:
    here = REPO.parent / "shared"  # a benchmark's default only: the app never reads ../shared
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mode", choices=["browser", "threads"], default="browser")
    parser.add_argument("--size", default="small", choices=["tiny", "small", "base"], help="random-weight BERT to build (unless --model)")
    parser.add_argument("--model", help="a model folder to serve instead of a random BERT")
    parser.add_argument("--sessions", type=int, nargs="+", default=[8, 32], help="concurrent sessions (threads mode: the first)")
    parser.add_argument("--requests", type=int, default=3, help="pairs each session inspects, one after another")
    parser.add_argument("--dataset-pairs", type=int, default=100)
    parser.add_argument("--batch-ms", type=int, nargs="+", default=[20, 0], help="BIASLENS_INSPECT_BATCH_MS values to compare")
    parser.add_argument("--data-dir", default=str(here / "data"), help="folder with crows-pairs/crows_pairs_anonymized.csv")
    parser.add_argument("--tokenizers", default=str(here / "tokenizers"), help="folder with bert-base-cased/")
    parser.add_argument("--app-sh", action="store_true", help="start the server with bash scripts/app.sh (runs its setup step first)")
    parser.add_argument("--port", type=int, default=0, help="0: a free port")
    parser.add_argument("--out", default=str(REPO / "benchmarks" / "results"))
    return parser.parse_args()


# ---------------------------------------------------------------------------------------
# The server
# ---------------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """The app, started as the README says, until `stop()`."""

    def __init__(self, args, model: Path, cache: Path, batch_ms: int, log: Path):
        self.port = args.port or _free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        env = {
            **os.environ,
            "BIASLENS_MODEL": str(model),
            "BIASLENS_DATA_DIR": str(args.data_dir),
            "BIASLENS_CACHE_DIR": str(cache),
            "BIASLENS_INSPECT_BATCH_MS": str(batch_ms),
            "HF_HUB_OFFLINE": "1",
        }
        flags = ["--server.port", str(self.port), "--server.headless", "true", "--browser.gatherUsageStats", "false"]
        command = ["bash", "scripts/app.sh", *flags] if args.app_sh else [sys.executable, "-m", "streamlit", "run", "app.py", *flags]
        self.log = log
        self.proc = subprocess.Popen(command, cwd=REPO, env=env, stdout=log.open("w"), stderr=subprocess.STDOUT)
        if not wait_until_healthy(self.base, self.proc, 600):
            self.stop()
            sys.exit(f"the app did not start: {log.read_text()[-2000:]}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()


# ---------------------------------------------------------------------------------------
# Sessions
# ---------------------------------------------------------------------------------------

#: The sentence-scores table of the pair whose id the page is asked for: its rows as text, or null while not shown.
READ_TABLE = """(id) => {
    const fresh = (e) => !e.closest('[data-stale="true"]');  // drawn by the current run, not left over from the last
    const heads = [...document.querySelectorAll('h1, h2, h3')].filter(fresh).map(h => h.textContent);
    if (!heads.some(t => t.includes('#' + id + ' ·'))) return null;
    for (const table of [...document.querySelectorAll('table.bl-table')].filter(fresh)) {
        const header = [...table.querySelectorAll('thead th')].map(th => th.textContent.trim());
        if (!header.includes('Token acc. stereo (%)')) continue;
        const rows = [...table.querySelectorAll('tbody tr')].map(tr => [...tr.querySelectorAll('td, th')].map(td => td.textContent.trim()));
        return rows.length ? {header, rows} : null;
    }
    return null;
}"""
#: Pairs the inspector's Pair box lists (pages/inspector.py MAX_LISTED); the search box finds the others.
LISTED = 200
SCRIPT_DONE = "() => document.querySelector('[data-testid=\"stApp\"]')?.getAttribute('data-test-script-state') === 'notRunning'"
ERROR_TEXT = """() => [...document.querySelectorAll('[data-testid="stException"], [data-testid="stAlertContentError"]')]
    .map(e => e.innerText).join(' | ')"""


async def wait_for_table(page, pair_id: int, started: float) -> tuple[float, dict | None, str]:
    """(seconds since `started` until the pair's scores table shows, the table, any error the page shows instead)."""
    deadline = started + TIMEOUT_MS / 1000
    while time.perf_counter() < deadline:
        table = await page.evaluate(READ_TABLE, pair_id)
        if table is not None:
            return time.perf_counter() - started, table, ""
        error = await page.evaluate(ERROR_TEXT)
        if error:
            return time.perf_counter() - started, None, error
        await asyncio.sleep(0.05)
    return time.perf_counter() - started, None, f"timed out after {TIMEOUT_MS / 1000:.0f} s"


async def choose_pair(page, pair_id: int) -> tuple[float, dict | None, str]:
    """Pick a pair in the inspector's Pair box, as a user does; the time runs from the click on the pair.

    The box lists the first `LISTED` pairs; a later one is first looked up with the search box, as a user would.
    """
    if pair_id >= LISTED:
        search = page.get_by_role("textbox", name="Search the sentences")
        await search.fill(f"#{pair_id}")
        await search.press("Enter")
        await page.locator('[data-testid="stSelectbox"]').filter(has_text=re.compile(r"Pair \(1 of ")).first.wait_for()
        await page.wait_for_function(SCRIPT_DONE)
    box = page.locator('[data-testid="stSelectbox"]').filter(has_text="Pair (").locator("input")
    await box.click()
    await page.keyboard.press("ControlOrMeta+a")
    await page.keyboard.press("Backspace")
    await page.keyboard.type(f"#{pair_id} ·")
    option = page.get_by_role("option", name=re.compile(rf"^#{pair_id} · "))
    if VERBOSE:
        print(f"    picking #{pair_id}", flush=True)
    await option.wait_for()
    started = time.perf_counter()
    await option.click()
    return await wait_for_table(page, pair_id, started)


async def session(browser, base: str, home: int, pair_ids: list[int], start: asyncio.Event | None = None) -> list:
    """One user: opens the inspector on pair `home` (already scored), waits for `start`, then picks each pair in turn."""
    context = await browser.new_context(viewport={"width": 1400, "height": 1000})
    page = await context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    out = []
    try:
        await page.goto(f"{base}/?pair={home}")  # the inspector is the main page
        latency, table, error = await wait_for_table(page, home, time.perf_counter())
        if error:
            return [(home, latency, table, error)]
        await page.wait_for_timeout(1000)  # the page drawn in full
        if start is not None:
            await start.wait()
        for pair_id in pair_ids:
            out.append(await choose_pair(page, pair_id))
            out[-1] = (pair_id, *out[-1])
    finally:
        await context.close()
    return out


async def start_dataset_run(browser, base: str, n_pairs: int, seed: int):
    """A session that starts a dataset run in the explorer; returns (context, page) once it is scoring."""
    context = await browser.new_context(viewport={"width": 1400, "height": 1000})
    page = await context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    await page.goto(f"{base}/explorer?sample={n_pairs}&metrics=aul&metrics=cps&seed={seed}")  # a new sample: nothing cached
    await page.get_by_role("button", name="Run", exact=True).click()
    await page.get_by_text(re.compile(rf"Scoring .*/ {n_pairs} pairs")).or_(page.get_by_text("CPS bias score")).first.wait_for()
    return context, page


async def dataset_run_finished(page) -> bool:
    return await page.get_by_text("CPS bias score").count() > 0 and await page.locator('[data-testid="stProgress"]').count() == 0


async def one_setting(args, model: Path, pairs: list, tmp: Path, batch_ms: int) -> dict:
    from playwright.async_api import async_playwright

    server = Server(args, model, tmp / f"cache-{batch_ms}", batch_ms, tmp / f"server-{batch_ms}.log")
    ids = iter(p.pair_id for p in pairs)
    report: dict = {"batch_ms": batch_ms, "under_load": {}}
    try:
        async with async_playwright() as pw:
            browser = await pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
            home = next(ids)
            await session(browser, server.base, home, [])  # warm-up: the model loads, its sanity check runs, `home` is scored
            print("  one user…", flush=True)
            report["alone"] = await session(browser, server.base, home, [next(ids) for _ in range(args.requests)])
            for n in args.sessions:
                print(f"  {n} sessions during a dataset run…", flush=True)
                run_context, run_page = await start_dataset_run(browser, server.base, args.dataset_pairs, seed=n)
                run_started = time.perf_counter()
                plan = [[next(ids) for _ in range(args.requests)] for _ in range(n)]
                start = asyncio.Event()
                tasks = [asyncio.create_task(session(browser, server.base, home, p, start)) for p in plan]
                await asyncio.sleep(5.0 + n)  # every user's page open and drawn before the first pick
                began = time.perf_counter()
                start.set()
                results = [
                    r
                    for t in await asyncio.gather(*tasks, return_exceptions=True)
                    for r in (t if isinstance(t, list) else [(-1, math.nan, None, repr(t))])
                ]
                wall = time.perf_counter() - began
                finished_during = await dataset_run_finished(run_page)
                try:
                    await run_page.get_by_text("CPS bias score").first.wait_for(timeout=TIMEOUT_MS)
                    run_s = time.perf_counter() - run_started
                except Exception:  # reported as not finished; the inspections are what is measured
                    run_s = math.nan
                await run_context.close()
                report["under_load"][str(n)] = {
                    "results": results,
                    "wall_s": wall,
                    "dataset_run_s": run_s,
                    "dataset_run_finished_before_the_inspections": finished_during,
                }
            await browser.close()
    finally:
        server.stop()
    return report


# ---------------------------------------------------------------------------------------
# Checking against the engine, and the report
# ---------------------------------------------------------------------------------------


def engine_tables(model: Path, pairs: list) -> dict[int, list[list[str]]]:
    """What the inspector's sentence-scores table should show for each pair, from `inspect_pair` here."""
    from biaslens.engine.evaluation import inspect_pair
    from biaslens.engine.metrics import PAPER_METRICS
    from biaslens.engine.models import load_model

    lm = load_model(str(model))
    out = {}
    for pair in pairs:
        frame = inspect_pair(lm, pair.sent_stereo, pair.sent_anti, metrics=PAPER_METRICS, top_k=5).summary_frame()
        out[pair.pair_id] = frame[["metric", "stereo", "anti", "margin", "verdict"]].values.tolist()
    return out


VERDICT_WORDS = {"stereo": "stereotypical", "anti": "anti-stereotypical"}


def mismatch(table: dict, expected: list) -> str:
    """'' when the page's table shows the engine's numbers and verdicts; else what differs."""
    header, rows = table["header"], table["rows"]
    col = {name: header.index(name) for name in ("Metric", "Stereotypical", "Anti-stereotypical", "Margin (stereo − anti)", "Prefers")}
    if len(rows) != len(expected):
        return f"{len(rows)} rows, expected {len(expected)}"
    for row, (metric, stereo, anti, margin, verdict) in zip(rows, expected):
        if row[col["Metric"]] != metric:
            return f"metric {row[col['Metric']]!r}, expected {metric!r}"
        for name, value in (("Stereotypical", stereo), ("Anti-stereotypical", anti), ("Margin (stereo − anti)", margin)):
            shown = row[col[name]].replace("−", "-")
            if not shown and math.isnan(value):
                continue
            if abs(float(shown) - value) > SHOWN:
                return f"{metric} {name}: page {shown}, engine {value:.6f}"
        prefers = row[col["Prefers"]].lower()
        if verdict in VERDICT_WORDS and not prefers.startswith(VERDICT_WORDS[verdict]):
            return f"{metric} prefers {prefers!r}, engine {verdict!r}"
    return ""


def summarise(results: list, expected: dict) -> dict:
    errors = [f"pair {pid}: {err}" for pid, _lat, _table, err in results if err]
    differences = [
        f"pair {pid}: {d}" for pid, _lat, table, err in results if not err and table is not None for d in [mismatch(table, expected[pid])] if d
    ]
    return {
        "latency": latency_percentiles([lat for _pid, lat, _table, err in results if not err]),
        "inspections": len(results),
        "errors": errors,
        "differences": differences,
    }


def markdown(r: dict) -> str:
    m = r["machine"]
    load = m.get("load_average_1min_before")
    lines = [
        f"# Load benchmark in the browser ({'PASS' if r['ok'] else 'FAIL'})",
        "",
        f"`python benchmarks/bench_load.py {' '.join(r['argv'])}`: the app served as the README says, driven from headless "
        f"Chromium, one browser context (Streamlit session) per user. Model: {r['model']}. "
        f"Each user opens the pair inspector, then picks {r['requests']} "
        f"new CrowS-Pairs pairs one after another (every paper metric, top-5 predictions, attention "
        f"matrices, the whole page drawn); under load one more session runs the dataset explorer on {r['dataset_pairs']} pairs "
        f"(AUL, CPS) at the same time. Latency: from picking the pair in the inspector's Pair box to its sentence-scores table on screen. "
        f"{m['cores']} CPU cores ({m['cpu']}), torch {m['torch']}, the browser on the same cores"
        + (f"; machine load average {load:.1f} before the run (other work shared these cores)." if load is not None else "."),
        "",
        "| BIASLENS_INSPECT_BATCH_MS | sessions | inspections | latency p50 / p90 / p99 / max (s) | p90 ÷ one user's p90 | "
        "dataset run (s) | errors | differences from the engine |",
        "| ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: |",
    ]
    for setting in r["settings"]:
        alone = setting["alone"]
        lines.append(
            f"| {setting['batch_ms']} | 1 (alone) | {alone['inspections']} | {latency_text(alone['latency'], seconds=True)} | 1.0 | | "
            f"{len(alone['errors'])} | {len(alone['differences'])} |"
        )
        for n, load_r in setting["under_load"].items():
            ratio = load_r["latency"].get("p90_ms", math.nan) / alone["latency"].get("p90_ms", math.nan)
            lines.append(
                f"| {setting['batch_ms']} | {n} | {load_r['inspections']} | {latency_text(load_r['latency'], seconds=True)} | {ratio:.1f} | "
                f"{load_r['dataset_run_s']:.0f} | {len(load_r['errors'])} | {len(load_r['differences'])} |"
            )
    problems = [p for s in r["settings"] for part in [s["alone"], *s["under_load"].values()] for p in part["errors"] + part["differences"]]
    lines += [
        "",
        f"Goal: p90 with 8 sessions ≤ 3x one user's, no errors. Pages compared with `inspect_pair`: {r['checked']} tables, "
        f"{len(problems)} problems" + (": " + "; ".join(problems[:5]) if problems else "") + ".",
        "",
    ]
    return "\n".join(lines)


def main() -> int:
    args = parse_args()
    if args.mode == "threads":
        import load_threads

        args.sessions = args.sessions[0]
        args.batch_ms = args.batch_ms[0]
        return load_threads.main(args)
    import torch

    from biaslens.data.datasets import load_dataset
    from biaslens.engine.testing import build_random_model

    crows_file = Path(args.data_dir) / "crows-pairs" / "crows_pairs_anonymized.csv"
    tokenizer = Path(args.tokenizers) / "bert-base-cased"
    if not crows_file.is_file() or (args.model is None and not tokenizer.is_dir()):
        sys.exit(f"{crows_file} or {tokenizer} is missing: pass --data-dir and --tokenizers")
    if not CHROMIUM.exists():
        sys.exit(f"{CHROMIUM} is missing (apt-get install chromium)")
    load_before = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    pairs = load_dataset(crows_file).pairs
    per_setting = 1 + args.requests * (1 + sum(args.sessions))
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        model = Path(args.model) if args.model else build_random_model("bert-cased", tokenizer, tmp / "model", size=args.size)
        settings, shown = [], []
        for k, batch_ms in enumerate(args.batch_ms):
            chosen = pairs[k * per_setting : (k + 1) * per_setting]  # new pairs for every server: nothing cached
            print(f"BIASLENS_INSPECT_BATCH_MS={batch_ms}: serving, {per_setting} inspections…", flush=True)
            settings.append(asyncio.run(one_setting(args, model, chosen, tmp, batch_ms)))
            shown += chosen
        print("checking every page against inspect_pair…", flush=True)
        expected = engine_tables(model, shown)
    checked = 0
    for setting in settings:
        setting["alone"] = summarise(setting["alone"], expected)
        checked += setting["alone"]["inspections"]
        for load_r in setting["under_load"].values():
            results = load_r.pop("results")
            load_r.update(summarise(results, expected))
            checked += load_r["inspections"]
    ok = all(
        not part["errors"] and not part["differences"] and part["latency"].get("n") == part["inspections"]
        for s in settings
        for part in [s["alone"], *s["under_load"].values()]
    )
    report = {
        "ok": ok,
        "argv": sys.argv[1:],
        "model": args.model or f"bert-{args.size} random weights (bert-base-cased tokenizer), float32",
        "requests": args.requests,
        "dataset_pairs": args.dataset_pairs,
        "checked": checked,
        "machine": {
            "cpu": platform.processor() or platform.machine(),
            "cores": os.cpu_count(),
            "torch": torch.__version__,
            "python": platform.python_version(),
            "load_average_1min_before": load_before,
        },
        "settings": settings,
    }
    print(write_report(args.out, "load", report, markdown))
    print(f"wrote {Path(args.out) / 'load'}.json and .md")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
