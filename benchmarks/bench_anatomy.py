"""The anatomy views' speed for one pair on a bert-base-sized model (issue 42's goals: integrated gradients at 64 steps
and every head's ablation, each under 2 s on 2 cores), and what the growing batch saves over one model call per head.

    python benchmarks/bench_anatomy.py [--size base] [--repeats 3] [--tokenizers ../shared/tokenizers] [--out benchmarks/results]
                                       [--goals-only]

A random-weight BERT of `--size` (SIZES: base = bert-base's shape, 12 layers x 12 heads, 768 wide) with bert-base-cased's
real tokenizer, and a GPT-2 of the same shape, score the pair below. Each measure runs `--repeats` times, the measures
alternating (so a change of load hits all of them alike), after one warm-up; the median is reported with the machine's
load average before and after and this machine's matmul rate measured in the same run (docs/anatomy.md counts the
floating-point work of each view). Writes `anatomy.json` and `anatomy.md` in `--out` (with `--goals-only`, without
the slow one-call-per-head reference: `anatomy-goals.json` and `anatomy-goals.md`, a quick second measurement).
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
sys.path.insert(0, str(REPO))

import torch  # noqa: E402

from biaslens.anatomy.attribution import attribute_pair  # noqa: E402
from biaslens.anatomy.focus import same_metric  # noqa: E402
from biaslens.anatomy.heads import ablated_scores, zeroed_score  # noqa: E402
from biaslens.anatomy.lens import logit_lens_pair  # noqa: E402
from biaslens.engine.models import load_model  # noqa: E402
from biaslens.engine.testing import build_random_causal_model, build_random_model  # noqa: E402

PAIR = ("Women don't know how to drive.", "Men don't know how to drive.")


def matmul_rate() -> float:
    """GFLOP/s of a (1024 x 768) @ (768 x 3072) float32 matmul here, now: bert-base's FFN shape."""
    a, w = torch.randn(1024, 768), torch.randn(768, 3072)
    for _ in range(3):
        a @ w
    start, k = time.perf_counter(), 20
    for _ in range(k):
        a @ w
    return 2 * 1024 * 768 * 3072 * k / (time.perf_counter() - start) / 1e9


def one_call_per_head(lm, s) -> None:
    """The reference cost: one forward pass per head (what the growing batch replaces)."""
    for layer in range(lm.num_layers):
        for head in range(lm.num_heads):
            zeroed_score(lm, s, [(layer, head)])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="base")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--tokenizers", default=str(REPO.parent / "shared" / "tokenizers"))
    parser.add_argument("--out", default=str(REPO / "benchmarks" / "results"))
    parser.add_argument("--goals-only", action="store_true", help="leave out one call per head (the slow reference); writes anatomy-goals.json / .md")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="bench-anatomy-"))
    models = {
        "bert": load_model(str(build_random_model("bert-cased", Path(args.tokenizers) / "bert-base-cased", folder / "bert", size=args.size))),
        "gpt2": load_model(str(build_random_causal_model("gpt2", Path(args.tokenizers) / "gpt2", folder / "gpt2", size=args.size))),
    }
    load_before = os.getloadavg()
    rate = matmul_rate()
    measures = {}
    for name, lm in models.items():
        a, b = same_metric(lm, *PAIR, None)
        measures[f"{name}: integrated gradients, 64 steps, both sentences"] = lambda lm=lm: attribute_pair(lm, *PAIR, n_steps=64)
        measures[f"{name}: every head ablated (growing batch), both sentences"] = lambda lm=lm, a=a, b=b: (
            ablated_scores(lm, a),
            ablated_scores(lm, b),
        )
        if not args.goals_only:
            measures[f"{name}: every head ablated, one call per head, both sentences"] = lambda lm=lm, a=a, b=b: (
                one_call_per_head(lm, a),
                one_call_per_head(lm, b),
            )
        measures[f"{name}: logit lens, both sentences"] = lambda lm=lm: logit_lens_pair(lm, *PAIR)
    times: dict[str, list[float]] = {k: [] for k in measures}
    for fn in measures.values():  # warm-up
        fn()
    for _ in range(args.repeats):
        for key, fn in measures.items():
            start = time.perf_counter()
            fn()
            times[key].append(time.perf_counter() - start)
    load_after = os.getloadavg()
    tokens = {name: [len(lm.encode(t)) for t in PAIR] for name, lm in models.items()}
    result = {
        "when": time.strftime("%Y-%m-%d %H:%M"),
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, torch {torch.__version__}, "
        f"{torch.get_num_threads()} threads",
        "load_average_before": load_before,
        "load_average_after": load_after,
        "matmul_gflops": rate,
        "size": args.size,
        "pair": PAIR,
        "tokens": tokens,
        "seconds": {k: {"median": statistics.median(v), "all": v} for k, v in times.items()},
    }
    lines = [
        f"# Anatomy views, one pair, {args.size}-sized models ({result['when']})",
        "",
        f"{result['machine']}; load average {load_before[0]:.2f} before, {load_after[0]:.2f} after; "
        f"matmul rate now {rate:.0f} GFLOP/s. Pair: {PAIR[0]!r} / {PAIR[1]!r} ({tokens} tokens).",
        "",
        "| measure | median s | runs (s) |",
        "| --- | ---: | --- |",
        *(f"| {k} | {statistics.median(v):.2f} | {', '.join(f'{x:.2f}' for x in v)} |" for k, v in times.items()),
        "",
    ]
    return write_results(Path(args.out), "anatomy-goals" if args.goals_only else "anatomy", result, lines)


def write_results(out: Path, stem: str, data: dict, lines: list[str]) -> int:
    """`<stem>.json` (the data) and `<stem>.md` (the lines, also printed) in `out`; 0."""
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{stem}.json").write_text(json.dumps(data, indent=2) + "\n")
    (out / f"{stem}.md").write_text("\n".join(lines))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
