"""`biaslens.score` against minicons' fastest setting: `python benchmarks/bench_scoring.py` (heavy: `flock /tmp/heavy.lock`).

On a bert-base-sized masked LM and a GPT-2-sized (124M) causal LM, random weights and the real tokenizers
(bert-base-cased, gpt2), over the first N sentences of CrowS-Pairs (`sent_stereo`), on the CPU threads given:

* biaslens: `score(lm, texts)` (masked: PLL `original`, every token masked alone; causal: first-token policy `bos`),
  which also gives each token's rank and the entropy of its distribution;
* minicons 0.3.39 (`token_score`, masked `PLL_metric="original"`, causal `bos_token=True`; log-probabilities only),
  run in the peer environment (.venv-peers, `bash scripts/peers.sh`; benchmarks/minicons_timing.py), over several
  batch sizes: its fastest is the one compared with;
* the largest difference between the two sides' token log-probabilities (they compute the same thing).

The machine may be shared: after `--sweeps` runs of each minicons batch size (its fastest run chooses the batch
size), both sides run `--repeats` more times, taking turns (biaslens, then minicons at that batch size), and each
side's fastest time is the one compared.

Writes `scoring-cpu.json` and `scoring-cpu.md` under `--out` (default benchmarks/results). Both sides run one after
the other in one invocation; compare the ratio within a run (other load slows both, not always equally).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

_CHECKOUT = Path(__file__).resolve().parents[1]
if str(_CHECKOUT) not in sys.path:
    sys.path.insert(0, str(_CHECKOUT))

import numpy as np  # noqa: E402
import torch  # noqa: E402

from biaslens.data.datasets import load_dataset  # noqa: E402
from biaslens.engine.models import load_model  # noqa: E402
from biaslens.engine.testing import build_random_causal_model, build_random_model  # noqa: E402
from biaslens.engine.text_scores import score  # noqa: E402

SHARED = _CHECKOUT.parent / "shared"
MODELS = {
    "masked": ("bert-base-cased (random weights, base size)", "bert-cased", "bert-base-cased"),
    "causal": ("gpt2 (random weights, 124M)", "gpt2", "gpt2"),
}
#: Target: biaslens at least this many times as fast as minicons' fastest setting.
TARGET = 1.5


def build(kind: str, tokenizers: Path, root: Path) -> Path:
    _, family, folder = MODELS[kind]
    if kind == "masked":
        return build_random_model(family, tokenizers / folder, root / kind, size="base")
    return build_random_causal_model(family, tokenizers / folder, root / kind, size="base")


def time_biaslens(folder: Path, texts: list[str]) -> tuple[float, Any]:
    lm = load_model(str(folder))
    score(lm, texts[:8])  # warm-up
    start = time.perf_counter()
    tokens = score(lm, texts)
    return time.perf_counter() - start, tokens


def time_minicons(python: Path, folder: Path, kind: str, texts: list[str], batches: list[int], threads: int) -> dict[str, Any]:
    request = {"model": str(folder), "kind": kind, "texts": texts, "batches": batches, "threads": threads}
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    env.update(HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false", OMP_NUM_THREADS=str(threads))
    done = subprocess.run(
        [str(python), str(Path(__file__).with_name("minicons_timing.py"))], input=json.dumps(request), capture_output=True, text=True, env=env
    )
    if done.returncode != 0:
        raise SystemExit(f"minicons failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sentences", type=int, default=500)
    parser.add_argument("--tokenizers", type=Path, default=SHARED / "tokenizers")
    parser.add_argument("--data-dir", type=Path, default=SHARED / "data")
    parser.add_argument("--peers", type=Path, default=_CHECKOUT / ".venv-peers" / "bin" / "python")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--batches", default="1,8,32,128", help="minicons batch sizes tried (its fastest is compared with)")
    parser.add_argument("--kinds", default="masked,causal")
    parser.add_argument("--repeats", type=int, default=2, help="more turns of both sides after the first (each side's fastest counts)")
    parser.add_argument("--sweeps", type=int, default=1, help="runs of every minicons batch size before its fastest is chosen")
    parser.add_argument("--out", type=Path, default=_CHECKOUT / "benchmarks" / "results")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    pairs = load_dataset("crows-pairs", data_dir=str(args.data_dir)).pairs
    texts = [p.sent_stereo for p in pairs[: args.sentences]]
    batches = [int(b) for b in args.batches.split(",")]
    results: dict[str, Any] = {
        "when": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "machine": {"platform": platform.platform(), "processor": platform.processor(), "cpus": os.cpu_count(), "threads": args.threads},
        "versions": {"torch": torch.__version__},
        "sentences": len(texts),
        "target": TARGET,
        "kinds": {},
    }
    with tempfile.TemporaryDirectory() as tmp:
        for kind in args.kinds.split(","):
            folder = build(kind, args.tokenizers, Path(tmp))
            ours, tokens = time_biaslens(folder, texts)
            sweep = time_minicons(args.peers, folder, kind, texts, batches, args.threads)
            runs = sweep["runs"]
            for _ in range(args.sweeps - 1):  # each batch size again: a busy moment does not decide which is fastest
                runs += time_minicons(args.peers, folder, kind, texts, batches, args.threads)["runs"]
            fastest = min(runs, key=lambda r: r[1])[0]
            mine_runs = [ours]
            for _ in range(args.repeats):
                mine_runs.append(time_biaslens(folder, texts)[0])
                runs += time_minicons(args.peers, folder, kind, texts, [fastest], args.threads)["runs"]
            ours = min(mine_runs)
            theirs = min(seconds for size, seconds in runs if size == fastest)
            mine = [g["logprob"].to_numpy() for _, g in tokens.groupby("text_id", sort=True)]
            their = [np.asarray(t[1:] if kind == "causal" else t) for t in sweep["logprob"]]  # minicons: the BOS it adds, 0.0
            delta = max(float(np.max(np.abs(a - b))) for a, b in zip(mine, their))
            by_size: dict[str, float] = {}
            for size, seconds in runs:
                by_size[str(size)] = round(min(seconds, by_size.get(str(size), float("inf"))), 2)
            results["kinds"][kind] = {
                "model": MODELS[kind][0],
                "tokens": int(len(tokens)),
                "biaslens_seconds": round(ours, 2),
                "biaslens_runs": [round(t, 2) for t in mine_runs],
                "biaslens_texts_per_s": round(len(texts) / ours, 1),
                "minicons_seconds": by_size,
                "minicons_runs": [[size, round(seconds, 2)] for size, seconds in runs],
                "minicons_fastest_batch": int(fastest),
                "speedup": round(theirs / ours, 2),
                "max_abs_logprob_difference": delta,
            }
            print(kind, results["kinds"][kind], flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    previous = args.out / "scoring-cpu.json"
    if previous.is_file():  # a run of some kinds keeps the others' last results
        kept = json.loads(previous.read_text(encoding="utf-8")).get("kinds", {})
        results["kinds"] = {**{k: v for k, v in kept.items() if k not in results["kinds"]}, **results["kinds"]}
    (args.out / "scoring-cpu.json").write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    (args.out / "scoring-cpu.md").write_text(markdown(results), encoding="utf-8")
    print(markdown(results))


def markdown(results: dict[str, Any]) -> str:
    machine = results["machine"]
    lines = [
        "# biaslens.score against minicons (CPU)",
        "",
        f"{results['sentences']} CrowS-Pairs sentences (`sent_stereo`), {machine['threads']} threads on {machine['cpus']} CPUs "
        f"({machine['processor'] or machine['platform']}), {results['when']}. Written by `benchmarks/bench_scoring.py`.",
        "",
        "| model | reading | tokens | biaslens (s) | minicons, fastest batch (s) | minicons by batch size (s, fastest run) | speedup "
        "| max abs log p difference |",
        "| --- | --- | ---: | ---: | ---: | --- | ---: | ---: |",
    ]
    readings = {"masked": "PLL original (every token masked alone)", "causal": "left to right, BOS first"}
    for kind, r in results["kinds"].items():
        by_batch = ", ".join(f"{b}: {s}" for b, s in r["minicons_seconds"].items())
        best = r["minicons_seconds"][str(r["minicons_fastest_batch"])]
        lines.append(
            f"| {r['model']} | {readings[kind]} | {r['tokens']:,} | {r['biaslens_seconds']} | {best} (batch {r['minicons_fastest_batch']}) "
            f"| {by_batch} | **{r['speedup']}×** | {r['max_abs_logprob_difference']:.1e} |"
        )
    lines += [
        "",
        f"Target: at least {results['target']}× minicons' fastest setting. biaslens's time includes each token's rank and the "
        "entropy of its distribution, which minicons' `token_score` leaves out. Each side's fastest of its runs "
        "(`biaslens_runs`, `minicons_runs` in scoring-cpu.json: the two took turns) counts.",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
