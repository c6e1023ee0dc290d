"""BBQ against lm-evaluation-harness: `python benchmarks/bench_choices.py` (CPU).

The same random-weight model (GPT-2-small-shaped by default: 124M parameters, the real GPT-2 tokenizer from
`--tokenizers`) and the same items (the first `--items` of each of the shared BBQ categories: 6 x 100 = 600 items, 7,200
prompt-choice requests under the lm-eval convention), scored two ways:

* lm-evaluation-harness's HF backend (`HFLM.loglikelihood` on its bbq task's requests: the prompt as context, " " and
  each of its twelve choices as continuation: it runs the prompt again for every choice), at each batch size of
  `--lm-eval-batches` (its fastest is reported), in the peer environment's python (`--peer-python`, made by
  scripts/peers.sh) on the saved model, its statistics from its own `utils.py` on its own log-likelihoods;
* biaslens, `evaluate_choices(..., "lm-eval")`: each prompt once, its twelve choices after it in the same row.

Both sides run in one process each time, alternating (biaslens, lm-eval at one batch size, biaslens, ...), so load from
other work on the machine falls on both; the load average is recorded beside every measurement, and each side's fastest
run is compared. The log-likelihoods must agree (largest |difference|) and every statistic must be equal (1e-6). The
forward work of each side (FLOPs over the tokens it runs, the LM head over the positions it projects) explains the ratio.
Writes benchmarks/results/bench-choices-<device>.{json,md}.
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
from biaslens.choices.conventions import DELIMITER, lm_eval_choices, prompt_of  # noqa: E402
from biaslens.choices.evaluation import evaluate_choices  # noqa: E402
from biaslens.data.multiple_choice import read_bbq  # noqa: E402
from biaslens.engine.models import load_model, resolve_device  # noqa: E402

#: lm-eval's timing, run in the peer environment: its bbq requests through HFLM.loglikelihood, then its statistics.
_LM_EVAL_SCRIPT = """
import importlib.util, json, sys, time
import datasets, numpy as np, torch, yaml
from pathlib import Path
import lm_eval
from lm_eval.api.instance import Instance
from lm_eval.api.registry import get_aggregation
from lm_eval.models.huggingface import HFLM
path, batch, rows_file, threads = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
torch.set_num_threads(threads)
tasks = Path(lm_eval.__file__).parent / "tasks" / "bbq"
spec = importlib.util.spec_from_file_location("bbq_utils", tasks / "utils.py")
utils = importlib.util.module_from_spec(spec); spec.loader.exec_module(utils)
rows = [json.loads(l) for l in open(rows_file) if l.strip()]
docs = list(utils.process_docs(datasets.Dataset.from_list(rows)))
lm = HFLM(pretrained=path, batch_size=batch, device="cpu", dtype="float32")
reqs = []
for d, doc in enumerate(docs):
    context = f"{doc['context']}\\n\\nQ: {doc['question']}\\nA:"
    for k, choice in enumerate(utils.doc_to_choice(doc)):
        reqs.append(Instance(request_type="loglikelihood", doc=doc, arguments=(context, " " + choice), idx=k))
tokens = sum(len(lm.tok_encode(r.args[0] + r.args[1])) - 1 for r in reqs)
start = time.perf_counter()
out = lm.loglikelihood(reqs, disable_tqdm=True)
seconds = time.perf_counter() - start
lls = [o[0] for o in out]
per = {}
at = 0
for doc in docs:
    n = len(utils.doc_to_choice(doc))
    found = utils.process_results_multiple_choice(doc, [(ll, False) for ll in lls[at:at + n]])
    at += n
    for name, value in found.items():
        per.setdefault(name, []).append(value)
config = yaml.safe_load((tasks / "bbq_multiple_choice.yaml").read_text().replace("!function ", ""))
stats = {}
for entry in config["metric_list"]:
    fn = get_aggregation("mean") if entry["aggregation"] == "mean" else getattr(utils, entry["aggregation"].split(".")[-1])
    value = float(fn(per[entry["metric"]]))
    stats[entry["metric"]] = None if value != value else value
print(json.dumps({"seconds": seconds, "lls": lls, "tokens": tokens, "statistics": stats}))
"""


def lm_eval_run(python: str, folder: Path, rows: Path, batch: int, threads: int) -> dict[str, Any]:
    """lm-eval's timing and statistics at batch size `batch`, in the peer environment (lm-eval is not biaslens's dependency)."""
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "run.py"
        script.write_text(_LM_EVAL_SCRIPT)
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
        done = subprocess.run([python, str(script), str(folder), str(batch), str(rows), str(threads)], capture_output=True, text=True, env=env)
    if done.returncode:
        raise RuntimeError(f"lm-eval failed: {done.stderr.strip()[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def biaslens_run(lm: Any, dataset: Any) -> dict[str, Any]:
    """biaslens under the lm-eval convention: seconds, the log-likelihoods in lm-eval's request order, its statistics."""
    start = time.perf_counter()
    run = evaluate_choices(lm, dataset, "lm-eval")
    seconds = time.perf_counter() - start
    lls = [float(x) for s in run.scored for x in s.ll[: len(lm_eval_choices(s.item) or ())]]
    return {"seconds": seconds, "lls": lls, "statistics": run.statistics("lm-eval"), "shared_prompt": run.summary["scoring"]["shared_prompt"]}


def forward_work(lm: Any, dataset: Any) -> dict[str, Any]:
    """Tokens each side runs through the model and positions it projects onto the vocabulary, and their FLOPs."""
    from benchmarks.bench_causal import causal_flops

    prompt_tokens = choice_tokens = lm_eval_tokens = 0
    for item in dataset.items:
        query = lm.encode_continuations(prompt_of(item), lm_eval_choices(item), DELIMITER)
        prompt_tokens += len(query.prompt)
        choice_tokens += sum(map(len, query.continuations))
        lm_eval_tokens += sum(len(query.prompt) + len(c) - 1 for c in query.continuations)
    body = sum(p.numel() for n, p in lm.model.named_parameters() if p.dim() == 2 and not any(k in n for k in ("wte", "wpe", "embed")))
    head = lm.model.get_output_embeddings().weight.numel()
    ours_tokens = prompt_tokens + choice_tokens
    return {
        "requests": sum(len(lm_eval_choices(it) or ()) for it in dataset.items),
        "lm_eval_tokens": lm_eval_tokens,
        "biaslens_tokens": ours_tokens,
        "lm_eval_flops": causal_flops(lm, lm_eval_tokens),  # every position projected onto the vocabulary
        "biaslens_flops": 2.0 * (ours_tokens * body + choice_tokens * head),  # only the choices' positions projected
    }


def compare(ours: dict[str, Any], theirs: dict[str, Any]) -> dict[str, Any]:
    a, b = np.asarray(ours["lls"]), np.asarray(theirs["lls"])
    differ = {
        k: (v, ours["statistics"].get(k))
        for k, v in theirs["statistics"].items()
        if not (
            (v is None and ours["statistics"].get(k) is None)
            or (v is not None and ours["statistics"].get(k) is not None and abs(v - ours["statistics"][k]) <= 1e-6)
        )
    }
    return {"max_abs_ll_diff": float(np.max(np.abs(a - b))), "statistics_differ": differ}


def run_cpu(args: argparse.Namespace) -> dict[str, Any]:
    from biaslens.engine.testing import build_random_causal_model

    device = resolve_device(args.device)
    torch.set_num_threads(args.threads)
    categories = sorted(Path(args.data_dir, "bbq").glob("*.jsonl"))
    rows = [json.loads(line) for path in categories for line in path.read_text().splitlines()[: args.items] if line.strip()]
    report: dict[str, Any] = {"created": datetime.now(timezone.utc).isoformat(timespec="seconds"), "machine": bench.machine_info(device)}
    with tempfile.TemporaryDirectory() as tmp:
        rows_file = Path(tmp) / "bbq_rows.jsonl"
        rows_file.write_text("".join(json.dumps(r) + "\n" for r in rows))
        dataset = read_bbq([rows_file])
        folder = build_random_causal_model("gpt2", Path(args.tokenizers) / "gpt2", Path(tmp) / "gpt2", size=args.size)
        lm = load_model(str(folder), device=str(device))
        work = forward_work(lm, dataset)
        runs: list[dict[str, Any]] = []
        ours: list[dict[str, Any]] = []
        theirs: dict[int, dict[str, Any]] = {}
        for batch in args.lm_eval_batches:  # alternating: biaslens, lm-eval at one batch size, ...
            ours.append({**biaslens_run(lm, dataset), "load": os.getloadavg()[0]})
            runs.append({"side": "biaslens", "seconds": ours[-1]["seconds"], "load_1min": ours[-1]["load"]})
            print(f"biaslens {ours[-1]['seconds']:.1f} s (load {ours[-1]['load']:.1f})", file=sys.stderr, flush=True)
            found = {**lm_eval_run(args.peer_python, folder, rows_file, batch, args.threads), "load": os.getloadavg()[0]}
            runs.append({"side": f"lm-eval batch {batch}", "seconds": found["seconds"], "load_1min": found["load"]})
            print(f"lm-eval batch {batch} {found['seconds']:.1f} s (load {found['load']:.1f})", file=sys.stderr, flush=True)
            theirs[batch] = found if batch not in theirs or found["seconds"] < theirs[batch]["seconds"] else theirs[batch]
        ours.append({**biaslens_run(lm, dataset), "load": os.getloadavg()[0]})
        runs.append({"side": "biaslens", "seconds": ours[-1]["seconds"], "load_1min": ours[-1]["load"]})
    best = min(ours, key=lambda r: r["seconds"])
    parameters = sum(p.numel() for p in lm.model.parameters())
    fastest = min(theirs, key=lambda b: theirs[b]["seconds"])
    report.update(
        model=f"GPT-2-{args.size}-shaped, random weights ({parameters / 1e6:.0f}M parameters), real GPT-2 tokenizer",
        items=len(dataset),
        categories=[p.stem for p in categories],
        threads=args.threads,
        **work,
        runs=runs,
        biaslens_seconds=best["seconds"],
        lm_eval_seconds={str(b): r["seconds"] for b, r in theirs.items()},
        lm_eval_fastest_batch=fastest,
        speedup_over_fastest=theirs[fastest]["seconds"] / best["seconds"],
        goal=3.0,
        shared_prompt=best["shared_prompt"],
        scores=compare(best, theirs[fastest]),
    )
    return report


def like_load(runs: Sequence[dict[str, Any]]) -> str:
    """The ratio at like load: lm-eval's fastest run against the biaslens run whose machine load was nearest its own (the
    fastest-against-fastest ratio may compare runs under different loads from other work)."""
    theirs = min((r for r in runs if r["side"] != "biaslens"), key=lambda r: r["seconds"])
    ours = min((r for r in runs if r["side"] == "biaslens"), key=lambda r: abs(r["load_1min"] - theirs["load_1min"]))
    return (
        f"- At like load: biaslens {ours['seconds']:.1f} s (load {ours['load_1min']:.1f}) against {theirs['side']} "
        f"{theirs['seconds']:.1f} s (load {theirs['load_1min']:.1f}): **{theirs['seconds'] / ours['seconds']:.2f}x**."
    )


def markdown(report: dict[str, Any]) -> str:
    m = report["machine"]
    met = "met" if report["speedup_over_fastest"] >= report["goal"] else "NOT met"
    theirs = report["lm_eval_seconds"][str(report["lm_eval_fastest_batch"])]
    work = report["lm_eval_flops"] / 1e12, report["biaslens_flops"] / 1e12
    lines = [
        f"# BBQ: biaslens vs lm-evaluation-harness, {report['created']}",
        "",
        f"Machine: {bench.machine_name(m)}, torch {m['torch']}, {report['threads']} threads, shared with other work "
        f"(1-minute load average beside each run). {report['model']}; the first {report['items'] // len(report['categories'])} items of "
        f"each of {len(report['categories'])} BBQ categories ({report['items']} items, {report['requests']:,} prompt-choice requests) "
        "under the lm-eval convention. Both sides measured alternately in one run; each side's fastest counts; nothing cached.",
        "",
        *bench.runs_table(report["runs"], ".1f"),
        "",
        f"- biaslens {report['biaslens_seconds']:.1f} s against lm-eval's fastest {theirs:.1f} s "
        f"(batch {report['lm_eval_fastest_batch']}): **{report['speedup_over_fastest']:.2f}x** (goal {report['goal']:.0f}x: {met}).",
        like_load(report["runs"]),
        f"- Work: lm-eval runs {report['lm_eval_tokens']:,} tokens, each projected onto the vocabulary ({work[0]:.1f} TFLOP); "
        f"biaslens {report['biaslens_tokens']:,} (each prompt once), projecting only the choices' tokens ({work[1]:.1f} TFLOP): "
        f"{report['lm_eval_flops'] / report['biaslens_flops']:.1f}x less work.",
        f"- Equal results: largest |log-likelihood difference| {report['scores']['max_abs_ll_diff']:.2e}; statistics that differ (1e-6): "
        f"{len(report['scores']['statistics_differ'])}. Shared prompt: {report['shared_prompt']['reason']}.",
    ]
    return "\n".join(lines) + "\n"


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python benchmarks/bench_choices.py", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--items", type=int, default=100, help="items per BBQ category (the first N of each file)")
    p.add_argument("--size", default="base", help="the GPT-2 shape (biaslens.engine.testing.SIZES): base is GPT-2 small")
    p.add_argument("--data-dir", default=str(bench._DEFAULT_SHARED / "data"))
    p.add_argument("--tokenizers", default=str(bench._DEFAULT_SHARED / "tokenizers"))
    p.add_argument("--device", default="cpu")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--lm-eval-batches", type=lambda s: [int(x) for x in s.split(",")], default=[8, 32])
    default_peer = _CHECKOUT / ".venv-peers" / "bin" / "python"
    p.add_argument("--peer-python", default=str(default_peer), help="python of the environment with lm-eval")
    p.add_argument("--out", default=str(_CHECKOUT / "benchmarks" / "results"))
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    report = run_cpu(args)
    stem = f"bench-choices-{resolve_device(args.device).type}"
    bench.write_report(Path(args.out), stem, report, markdown, default=str)
    print(markdown(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
