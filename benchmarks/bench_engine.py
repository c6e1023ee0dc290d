"""Engine vs. the naive ways of computing the same scores, measured in one run.

    python benchmarks/bench_engine.py [--pairs 300] [--size base] [--out benchmarks/results]

A bert-base-sized random-weight model with the real bert-base-cased tokenizer from
../shared/tokenizers scores the first N CrowS-Pairs pairs from ../shared/data:

* AUL + AULA: the engine (length-sorted batches under a token budget, one unmasked pass
  gives both) against one sentence per forward pass with full logits, as the reference
  code does;
* CPS: the engine (masked copies of many sentences packed together, only the masked
  positions projected onto the vocabulary) against one batch per sentence holding all
  of its masked copies, with full logits.

It prints throughput, the speed-up ratio and the largest score difference, and writes
them as JSON. Goals (issue 2): AUL+AULA >= 3x, CPS >= 1.3x, scores within 1e-4.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import time
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
sys.path.insert(0, str(REPO))

from biaslens.alignment import align_pair  # noqa: E402
from biaslens.datasets import load_dataset  # noqa: E402
from biaslens.evaluation import score_encoded_pairs  # noqa: E402
from biaslens.models import load_model  # noqa: E402
from biaslens.testing import build_random_model  # noqa: E402


@torch.inference_mode()
def naive_aul_aula(lm, encodings):
    """One sentence per forward pass, full logits, eager attention (the reference code's way)."""
    model = lm._eager_model()
    out = {}
    for enc in encodings:
        ids = torch.tensor([enc.ids])
        result = model(ids, output_attentions=True)
        logp = torch.log_softmax(result.logits[0].float(), -1).gather(1, ids.view(-1, 1))[1:-1, 0]
        received = torch.stack(result.attentions).mean(dim=(0, 2))[0].mean(0)[1:-1]
        out[enc.text] = (logp.mean().item(), (logp * received).mean().item())
    return out


@torch.inference_mode()
def naive_cps(lm, pairs):
    """One batch per sentence: all its masked copies, full logits over every position."""
    out = []
    for a, b in pairs:
        al = align_pair(a, b)
        scores = []
        for enc, positions in ((a, al.unmodified_a), (b, al.unmodified_b)):
            ids = torch.tensor([enc.ids]).repeat(len(positions), 1)
            rows = torch.arange(len(positions))
            ids[rows, list(positions)] = lm.mask_id
            logits = lm.model(ids).logits
            logp = torch.log_softmax(logits[rows, list(positions)].float(), -1)
            scores.append(logp[rows, [enc.ids[p] for p in positions]].sum().item())
        out.append(tuple(scores))
    return out


def timed(fn, *args, **kwargs):
    start = time.perf_counter()
    value = fn(*args, **kwargs)
    return value, time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=300)
    parser.add_argument("--size", default="base", choices=["tiny", "small", "base", "large"])
    parser.add_argument("--out", default=str(REPO / "benchmarks" / "results"))
    args = parser.parse_args()
    if not SHARED.is_dir():
        sys.exit("benchmarks need ../shared beside the checkout (tokenizers and data)")

    torch.manual_seed(0)
    with tempfile.TemporaryDirectory() as tmp:
        folder = build_random_model("bert-cased", SHARED / "tokenizers" / "bert-base-cased", Path(tmp) / "m", size=args.size)
        lm = load_model(str(folder))
    dataset = load_dataset(SHARED / "data" / "crows-pairs" / "crows_pairs_anonymized.csv")
    pairs = [(lm.encode(p.sent_stereo), lm.encode(p.sent_anti)) for p in dataset.pairs[: args.pairs]]
    sentences = list({e.text: e for pair in pairs for e in pair}.values())
    score_encoded_pairs(lm, pairs[:4], ["aul", "aula", "cps"])  # warm-up

    engine_aul, t_engine_aul = timed(score_encoded_pairs, lm, pairs, ["aul", "aula"])
    naive_aul, t_naive_aul = timed(naive_aul_aula, lm, sentences)
    engine_cps, t_engine_cps = timed(score_encoded_pairs, lm, pairs, ["cps"])
    baseline_cps, t_naive_cps = timed(naive_cps, lm, pairs)

    diff_aul = max(
        max(abs(r.scores["aul"][k].value - naive_aul[e.text][0]), abs(r.scores["aula"][k].value - naive_aul[e.text][1]))
        for r, pair in zip(engine_aul, pairs)
        for k, e in enumerate(pair)
    )
    diff_cps = max(abs(r.scores["cps"][k].value - b[k]) for r, b in zip(engine_cps, baseline_cps) for k in range(2))
    masked_rows = sum(len(align_pair(a, b).unmodified_a) * 2 for a, b in pairs)
    report = {
        "device": str(lm.device),
        "threads": torch.get_num_threads(),
        "cpu": platform.processor() or platform.machine(),
        "model": f"bert-{args.size} random weights, bert-base-cased tokenizer",
        "pairs": len(pairs),
        "sentences": len(sentences),
        "aul_aula": {
            "engine_s": t_engine_aul,
            "one_sentence_per_pass_s": t_naive_aul,
            "engine_sentences_per_s": len(sentences) / t_engine_aul,
            "speedup": t_naive_aul / t_engine_aul,
            "max_abs_diff": diff_aul,
            "goal": ">= 3x",
        },
        "cps": {
            "engine_s": t_engine_cps,
            "one_batch_per_sentence_s": t_naive_cps,
            "engine_masked_rows_per_s": masked_rows / t_engine_cps,
            "speedup": t_naive_cps / t_engine_cps,
            "max_abs_diff": diff_cps,
            "goal": ">= 1.3x",
        },
    }
    print(f"{len(pairs)} CrowS-Pairs pairs, {report['model']}, {report['device']} x{report['threads']} threads")
    for name, r, base in (("AUL+AULA", report["aul_aula"], "one_sentence_per_pass_s"), ("CPS", report["cps"], "one_batch_per_sentence_s")):
        print(
            f"{name:<9} engine {r['engine_s']:7.2f} s   baseline {r[base]:7.2f} s   "
            f"speed-up {r['speedup']:5.2f}x (goal {r['goal']})   max |diff| {r['max_abs_diff']:.2e}"
        )
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "engine.json").write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {out / 'engine.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
