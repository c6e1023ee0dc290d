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
    out = Path(args.out)
    kept = _recorded(out / "lab-anatomy.json", args)  # the seeds recorded before, not run again
    records = []
    for seed in args.seeds:
        settings = dataclasses.replace(scenario_settings("association", association=args.association), seed=seed)
        started = time.perf_counter()
        model = train_lab_model(settings)
        found = planted_anatomy(load_model(str(model.path)), settings, k=args.k, n_steps=args.steps)
        records.append({**found.record(), "association": settings.association, "steps": args.steps, "seconds": time.perf_counter() - started})
        print(json.dumps(records[-1]), flush=True)
    records = sorted([r for r in kept if r["seed"] not in args.seeds] + records, key=lambda r: r["seed"])
    k = args.k
    header = (
        f"| seed | IG share on the planted words (their token share) | attribute has the largest difference (chance) | top {k} heads "
        f"(from the first half) | planted margin, second half | shrink, top {k} zeroed | shrink, mean of all {k}-head sets | sets the top {k} beat |"
    )
    rows = [
        f"| {r['seed']} | {r['planted_share']:.2f} ({r['planted_token_share']:.2f}) | {r['attribute_top']:.2f} ({r['attribute_chance']:.2f}) | "
        f"{', '.join(f'L{layer}H{head}' for layer, head in r['top_heads'])} | {r['margin']:+.4f} | {r['top_k_shrink']:+.4f} | "
        f"{r['random_k_shrink']:+.4f} | {r['top_k_beats']:.0%} |"
        for r in records
    ]
    lines = [
        "# The anatomy of the lab's planted association",
        "",
        header,
        "| ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: |",
        *rows,
        "",
        f"Seeds {', '.join(str(r['seed']) for r in records)}, k = {k}, {args.steps} integrated-gradients steps; the numbers are also in "
        "`benchmarks/results/lab-anatomy.json` (with each seed's seconds, training included where it was not cached).",
        "",
    ]
    return write_results(out, "lab-anatomy", {"when": time.strftime("%Y-%m-%d %H:%M"), "seeds": records}, lines)


def _recorded(path: Path, args: argparse.Namespace) -> list[dict]:
    """The seeds `path` holds from an earlier run with the same k, steps and association (a run of some seeds adds to them)."""
    if not path.is_file():
        return []
    same = [r for r in json.loads(path.read_text()).get("seeds", []) if r.get("k") == args.k and r.get("steps", args.steps) == args.steps]
    return [r for r in same if args.association is None or r.get("association") == args.association]


if __name__ == "__main__":
    raise SystemExit(main())
