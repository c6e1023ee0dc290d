"""Does the anatomy find a planted bias? The bias lab's planted-association model, trained with several seeds, taken
apart (biaslens.lab.anatomy.planted_anatomy): attribution on the planted words, and the heads found on half of the
held-out pairs zeroed on the other half against every other set of as many heads. The result is recorded in
docs/lab.md (*Where the planted bias lives*).

    python benchmarks/lab_anatomy.py [--seeds 0 1 2 3 4] [--k 2] [--steps 32] [--association 0.9] [--out benchmarks/results]

Each seed trains (or finds in the cache) the lab's default 2-layer, 4-head BERT on the planted-association corpus.
Writes `lab-anatomy.json` and `lab-anatomy.md` in `--out`.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_anatomy import write_results  # noqa: E402
from biaslens.engine.models import load_model  # noqa: E402
from biaslens.lab.anatomy import planted_anatomy  # noqa: E402
from biaslens.lab.settings import scenario_settings  # noqa: E402
from biaslens.lab.store import train_lab_model  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--k", type=int, default=2)
    parser.add_argument("--steps", type=int, default=32)
    parser.add_argument("--association", type=float, default=None, help="default: the preset's")
    parser.add_argument("--out", default=str(REPO / "benchmarks" / "results"))
    args = parser.parse_args()
    records = []
    for seed in args.seeds:
        settings = dataclasses.replace(scenario_settings("association", association=args.association), seed=seed)
        started = time.perf_counter()
        model = train_lab_model(settings)
        found = planted_anatomy(load_model(str(model.path)), settings, k=args.k, n_steps=args.steps)
        records.append({**found.record(), "association": settings.association, "seconds": time.perf_counter() - started})
        print(json.dumps(records[-1]), flush=True)
    header = (
        "| seed | IG share on planted words | their token share | attribute has the largest difference | chance | top-k heads "
        "| planted margin | shrink, top k | shrink, mean of every k | sets the top k beats |"
    )
    rows = [
        f"| {r['seed']} | {r['planted_share']:.2f} | {r['planted_token_share']:.2f} | {r['attribute_top']:.2f} | {r['attribute_chance']:.2f} | "
        f"{', '.join(f'L{layer}H{head}' for layer, head in r['top_heads'])} | {r['margin']:+.3f} | {r['top_k_shrink']:+.3f} | "
        f"{r['random_k_shrink']:+.3f} | {r['top_k_beats']:.0%} |"
        for r in records
    ]
    lines = [
        f"# The anatomy of the lab's planted association ({len(records)} seeds, k = {args.k}, {args.steps} IG steps)",
        "",
        header,
        "| --- " * 10 + "|",
        *rows,
        "",
    ]
    return write_results(Path(args.out), "lab-anatomy", {"when": time.strftime("%Y-%m-%d %H:%M"), "seeds": records}, lines)


if __name__ == "__main__":
    raise SystemExit(main())
