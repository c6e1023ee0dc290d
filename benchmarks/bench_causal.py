"""Causal models against lm-evaluation-harness: `python benchmarks/bench_causal.py` (CPU), and the causal part of gpu_check.py.

The same random-weight model of a real causal architecture (GPT-2-small-shaped by default: 124M
parameters, the real GPT-2 tokenizer from `--tokenizers`), the same pairs (the first `--pairs`
CrowS-Pairs pairs, both sentences each), scored two ways:

* lm-evaluation-harness's HF backend (`HFLM.loglikelihood`, the crows_pairs task's requests:
  empty context, the sentence as continuation), at its default batch size (1) and at the
  batch sizes of `--lm-eval-batches` (its fastest is reported);
* biaslens, `evaluate(..., convention="lm-eval")` with the `ll` metric: the same sums.

Seconds are the fastest of `--repeat`, the model already loaded, nothing cached. The scores
must agree (`max_abs_ll_diff`, and the verdicts). lm-eval runs in this process when it is
importable, else in the peer environment's python (`--peer-python`, default `.venv-peers`,
made by scripts/peers.sh) on the same saved model. The floor is the model's forward FLOPs
over the real tokens at the dense matmul peak measured in the same run.
Writes benchmarks/results/bench-causal-<device>.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import torch

_CHECKOUT = Path(__file__).resolve().parents[1]
if str(_CHECKOUT) not in sys.path:  # run as a script from the checkout
    sys.path.insert(0, str(_CHECKOUT))

from benchmarks import bench_engine as bench  # noqa: E402
from biaslens.data.datasets import load_dataset  # noqa: E402
from biaslens.engine.evaluation import evaluate  # noqa: E402
from biaslens.engine.lm import LanguageModel  # noqa: E402
from biaslens.engine.models import load_model, resolve_device  # noqa: E402

#: lm-eval's own timing, run where it is installed: prints {"seconds": ..., "ll": [...]} as JSON.
_LM_EVAL_SCRIPT = """
import json, sys, time
import torch
from lm_eval.api.instance import Instance
from lm_eval.models.huggingface import HFLM
path, batch, repeat, sentences = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), json.load(open(sys.argv[4]))
torch.set_num_threads(int(sys.argv[5]))
lm = HFLM(pretrained=path, batch_size=batch, device="cpu")
reqs = [Instance(request_type="loglikelihood", doc={}, arguments=("", s), idx=i) for i, s in enumerate(sentences)]
best, out = None, None
for _ in range(repeat):
    start = time.perf_counter()
    out = lm.loglikelihood(reqs, disable_tqdm=True)
    seconds = time.perf_counter() - start
    best = seconds if best is None else min(best, seconds)
print(json.dumps({"seconds": best, "ll": [o[0] for o in out]}))
"""


def lm_eval_in_process(model: Any, tokenizer: Any, sentences: Sequence[str], batch_size: int, device: torch.device, repeat: int) -> dict[str, Any]:
    """lm-eval's `HFLM.loglikelihood` over `sentences` (the crows_pairs requests), in this process (it must import)."""
    from lm_eval.api.instance import Instance
    from lm_eval.models.huggingface import HFLM

    lm = HFLM(pretrained=model, tokenizer=tokenizer, batch_size=batch_size, device=str(device))
    requests = [Instance(request_type="loglikelihood", doc={}, arguments=("", s), idx=i) for i, s in enumerate(sentences)]
    best, out = None, []
    for _ in range(max(1, repeat)):
        bench._sync(device)
        start = time.perf_counter()
        out = lm.loglikelihood(requests, disable_tqdm=True)
        bench._sync(device)
        seconds = time.perf_counter() - start
        best = seconds if best is None else min(best, seconds)
    return {"seconds": best, "ll": [o[0] for o in out]}


def lm_eval_subprocess(python: str, folder: Path, sentences: Sequence[str], batch_size: int, repeat: int, threads: int) -> dict[str, Any]:
    """The same, in the peer environment's python on the saved model (lm-eval is not one of biaslens's dependencies)."""
    with tempfile.TemporaryDirectory() as tmp:
        script, data = Path(tmp) / "run.py", Path(tmp) / "sentences.json"
        script.write_text(_LM_EVAL_SCRIPT)
        data.write_text(json.dumps(list(sentences)))
        done = subprocess.run(
            [python, str(script), str(folder), str(batch_size), str(repeat), str(data), str(threads)], capture_output=True, text=True
        )
    if done.returncode:
        raise RuntimeError(f"lm-eval failed: {done.stderr.strip().splitlines()[-1] if done.stderr.strip() else done.returncode}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def biaslens_ll(lm: LanguageModel, pairs: Sequence[Any], repeat: int) -> dict[str, Any]:
    """biaslens under the lm-eval convention (the `ll` metric only): seconds and the sums, in lm-eval's request order."""
    result, timing = bench.timed(lm.device, evaluate, lm, pairs, ["ll"], convention="lm-eval", cache=None, repeat=repeat)
    ll = result.pairs[["ll_stereo", "ll_anti"]].to_numpy(float)
    scored = set(result.pairs["pair_id"])  # pairs whose sentences encode alike are left out: their place in lm-eval's order
    at = [k for k, p in enumerate(pairs) if p.pair_id in scored]
    return {"seconds": timing.seconds, "peak_memory_bytes": timing.memory, "ll": [x for row in ll for x in row], "at": at, "result": result}


def theirs_at(theirs: dict[str, Any], at: Sequence[int]) -> list[float]:
    """lm-eval's sums (two per pair, in the pairs' order) of the pairs at `at`: the ones biaslens scored."""
    return [theirs["ll"][2 * k + side] for k in at for side in (0, 1)]


def token_count(lm: LanguageModel, sentences: Sequence[str]) -> int:
    """Real tokens scored (each sentence after its one prefix token), what both tools run through the model."""
    return sum(len(e.ids) for e in lm.encode_many(list(sentences)))


def causal_flops(lm: LanguageModel, tokens: int) -> float:
    """Forward FLOPs (x2 multiply-adds) of `tokens` tokens: every weight matrix once per token, the LM head included."""
    matrices = sum(
        p.numel() for name, p in lm.model.named_parameters() if p.dim() == 2 and "embed" not in name and "wte" not in name and "wpe" not in name
    )
    head = lm.model.get_output_embeddings()
    tied = head is not None and head.weight.data_ptr() == lm.model.get_input_embeddings().weight.data_ptr()
    return 2.0 * tokens * (matrices + (head.weight.numel() if tied and head is not None else 0))


def shared_prefix_tokens(lm: LanguageModel, pairs: Sequence[Any]) -> int:
    """The tokens a pair's two sentences have in common before their first difference, counted once less (what the
    shared-prefix pass, `scoring.shared_prefix_pass`, does not run twice)."""
    saved = 0
    for p in pairs:
        a, b = (e.ids for e in lm.encode_many([p.sent_stereo, p.sent_anti]))
        common = 0
        while common < min(len(a), len(b)) - 1 and a[common] == b[common]:
            common += 1
        saved += max(common, 1)
    return saved


def compare_ll(ours: Sequence[float], theirs: Sequence[float]) -> dict[str, Any]:
    a, b = np.asarray(ours, float), np.asarray(theirs, float)
    verdicts_a, verdicts_b = np.sign(a[0::2] - a[1::2]), np.sign(b[0::2] - b[1::2])
    return {"max_abs_ll_diff": float(np.max(np.abs(a - b))), "verdicts_differ": int((verdicts_a != verdicts_b).sum())}


def run_cpu(args: argparse.Namespace) -> dict[str, Any]:
    from biaslens.engine.testing import build_random_causal_model

    device = resolve_device(args.device)
    torch.set_num_threads(args.threads)
    pairs = list(load_dataset(Path(args.data_dir) / "crows-pairs" / "crows_pairs_anonymized.csv").pairs[: args.pairs])
    sentences = [s for p in pairs for s in (p.sent_stereo, p.sent_anti)]
    report: dict[str, Any] = {"created": datetime.now(timezone.utc).isoformat(timespec="seconds"), "machine": bench.machine_info(device)}
    with tempfile.TemporaryDirectory() as tmp:
        folder = build_random_causal_model("gpt2", Path(args.tokenizers) / "gpt2", Path(tmp) / "gpt2", size="base")
        lm = load_model(str(folder), device=str(device))
        tokens = token_count(lm, sentences)
        peak = bench.matmul_peak(device, torch.float32, seconds=2.0)["flops"]
        flops = causal_flops(lm, tokens)
        ours = biaslens_ll(lm, pairs, args.repeat)
        runs = [{"side": "biaslens", "seconds": ours["seconds"], "load_1min": os.getloadavg()[0]}]
        theirs: dict[str, Any] = {}
        for batch in [b for _ in range(args.rounds) for b in args.lm_eval_batches]:  # alternating: lm-eval at one batch size, biaslens, ...
            if args.peer_python:
                found = lm_eval_subprocess(args.peer_python, folder, sentences, batch, args.repeat, args.threads)
            else:
                found = lm_eval_in_process(lm.model, lm.tokenizer, sentences, batch, device, args.repeat)
            theirs[batch] = found if batch not in theirs or found["seconds"] < theirs[batch]["seconds"] else theirs[batch]
            runs.append({"side": f"lm-eval batch {batch}", "seconds": found["seconds"], "load_1min": os.getloadavg()[0]})
            again = biaslens_ll(lm, pairs, args.repeat)
            runs.append({"side": "biaslens", "seconds": again["seconds"], "load_1min": os.getloadavg()[0]})
            ours = again if again["seconds"] < ours["seconds"] else ours
    fastest = min(theirs, key=lambda b: theirs[b]["seconds"])
    report.update(
        model=f"GPT-2-small-shaped, random weights ({sum(p.numel() for p in lm.model.parameters()) / 1e6:.0f}M parameters), real GPT-2 tokenizer",
        pairs=len(pairs),
        sentences=len(sentences),
        tokens=tokens,
        threads=args.threads,
        flops=flops,
        peak_flops=peak,
        floor_seconds=flops / peak,
        biaslens_seconds=ours["seconds"],
        lm_eval_seconds={str(b): r["seconds"] for b, r in theirs.items()},
        lm_eval_default_batch=1,
        lm_eval_fastest_batch=fastest,
        speedup_over_default=theirs[1]["seconds"] / ours["seconds"] if 1 in theirs else None,
        speedup_over_fastest=theirs[fastest]["seconds"] / ours["seconds"],
        share_of_floor_speed=(flops / peak) / ours["seconds"],
        runs=runs,
        shared_prefix_tokens=shared_prefix_tokens(lm, pairs),
        scores=compare_ll(ours["ll"], theirs_at(theirs[fastest], ours["at"])),
    )
    return report


def markdown(report: dict[str, Any]) -> str:
    m = report["machine"]
    lines = [
        f"# biaslens vs lm-evaluation-harness, causal scoring, {report['created']}",
        "",
        f"Machine: {bench.machine_name(m)}, torch {m['torch']}, {report['threads']} threads. {report['model']}; "
        f"the first {report['pairs']} CrowS-Pairs pairs ({report['sentences']} sentences, {report['tokens']:,} tokens). "
        f"Forward work {report['flops'] / 1e12:.2f} TFLOP; dense float32 matmul peak {report['peak_flops'] / 1e9:.0f} GFLOP/s measured "
        f"in the run, so the floor is {report['floor_seconds']:.1f} s. Fastest of the runs; nothing cached.",
        "",
        "| scorer | seconds |",
        "| --- | ---: |",
        *[f"| lm-eval HFLM, batch {b}{' (its default)' if b == '1' else ''} | {s:.2f} |" for b, s in report["lm_eval_seconds"].items()],
        f'| **biaslens** (`evaluate(..., convention="lm-eval")`, `ll`) | **{report["biaslens_seconds"]:.2f}** |',
        "",
        *(
            [
                "Runs in order (alternating; the 1-minute load average of the machine, shared with other work, after each):",
                "",
                *bench.runs_table(report["runs"]),
                "",
                f"A pair's common first tokens are read once (`scoring.shared_prefix_pass`): {report['shared_prefix_tokens']:,} of the "
                f"{report['tokens']:,} tokens ({report['shared_prefix_tokens'] / report['tokens']:.0%}) are not run twice.",
                "",
            ]
            if "runs" in report
            else []
        ),
        "- biaslens is "
        + (f"{report['speedup_over_default']:.2f}x lm-eval's default and " if report["speedup_over_default"] is not None else "")
        + f"{report['speedup_over_fastest']:.2f}x its fastest "
        f"(batch {report['lm_eval_fastest_batch']}); {report['share_of_floor_speed']:.0%} of the floor's speed.",
        f"- Equal scores: largest |ll difference| {report['scores']['max_abs_ll_diff']:.2e}, "
        f"verdicts that differ {report['scores']['verdicts_differ']}.",
    ]
    return "\n".join(lines) + "\n"


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python benchmarks/bench_causal.py", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--pairs", type=int, default=200)
    p.add_argument("--data-dir", default=str(bench._DEFAULT_SHARED / "data"))
    p.add_argument("--tokenizers", default=str(bench._DEFAULT_SHARED / "tokenizers"))
    p.add_argument("--device", default="cpu")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--repeat", type=int, default=2)
    p.add_argument("--rounds", type=int, default=1, help="times through --lm-eval-batches, alternating with biaslens (each side's fastest counts)")
    p.add_argument("--lm-eval-batches", type=lambda s: [int(x) for x in s.split(",")], default=[1, 8, 16, 32])
    default_peer = _CHECKOUT / ".venv-peers" / "bin" / "python"
    p.add_argument("--peer-python", default=str(default_peer) if default_peer.exists() else "", help="python of the environment with lm-eval")
    p.add_argument("--out", default=str(_CHECKOUT / "benchmarks" / "results"))
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    report = run_cpu(args)
    out = Path(args.out)
    stem = f"bench-causal-{resolve_device(args.device).type}"
    bench.write_report(out, stem, report, markdown, default=str)
    print(markdown(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
