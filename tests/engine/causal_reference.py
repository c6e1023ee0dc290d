"""Naive, one-sentence-at-a-time references for causal models: biaslens's causal metrics, and each peer tool's code.

The metrics are written from docs/metrics.md ("Causal models") with full logits and no batching.
The peers' scoring is reproduced line by line from their published code (the lines are named at
each function), so that `biaslens.engine.conventions` can be checked against them on the same model:

* lm-evaluation-harness 0.4.x: `lm_eval/api/model.py::TemplateLM.loglikelihood` (an empty context
  becomes `[self.prefix_token_id]`, the continuation `tok_encode(continuation)` with no special
  tokens), `lm_eval/models/huggingface.py::HFLM.prefix_token_id` (BOS, else EOS) and
  `_loglikelihood_tokens` (`inp = (context_enc + continuation_enc)[-(max_length + 1):][:-1]`,
  `F.log_softmax(logits, dim=-1)` in the model's dtype, the continuation's slice, `torch.gather`,
  `float(logits.sum())`), and `lm_eval/tasks/crows_pairs/utils.py::process_results`.
* bias-bench: `bias_bench/benchmark/crows/crows.py::CrowSPairsRunner._joint_log_probability`.
* Oba et al. (2024): `notebook/exp_llama2.ipynb::calc_ll` (no preamble) and `evaluate`.
"""

from __future__ import annotations

import difflib

import numpy as np
import torch
import torch.nn.functional as F


def _sentence_ids(lm, text):
    return lm.tokenizer(text, add_special_tokens=False)["input_ids"]


@torch.inference_mode()
def token_logprobs(lm, ids, attention=False):
    """log P(ids[i] | ids[:i]) for i >= 1 (float64), and the attention each position receives (mean over layers, heads and
    the rows that can attend to it: rows q >= k for key k)."""
    model = lm._eager_model() if attention else lm.model
    out = model(torch.tensor([ids]), output_attentions=attention)
    logp = torch.log_softmax(out.logits[0].float(), dim=-1)
    gold = logp[:-1].gather(1, torch.tensor(ids[1:])[:, None])[:, 0].double().numpy()
    ranks = (logp[:-1] > logp[:-1].gather(1, torch.tensor(ids[1:])[:, None])).sum(1).numpy() + 1
    received = None
    if attention:
        att = torch.stack([a[0].float() for a in out.attentions]).mean(0).mean(0)  # layers, then heads -> (L, L)
        received = np.array([float(att[k:, k].double().mean()) for k in range(att.shape[1])])  # over rows q >= k
    return gold, ranks, received


def _spans(ids_a, ids_b):
    equal_a, equal_b, diff_a, diff_b = [], [], [], []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, [str(x) for x in ids_a], [str(x) for x in ids_b]).get_opcodes():
        (equal_a if tag == "equal" else diff_a).extend(range(i1, i2))
        (equal_b if tag == "equal" else diff_b).extend(range(j1, j2))
    return (equal_a, diff_a), (equal_b, diff_b)


def causal_scores(lm, stereo, anti):
    """Every causal metric of a pair, one sentence per forward pass, under `lm.first_token` ("bos" or "none")."""
    policy = lm.first_token.value
    assert policy in ("bos", "none"), policy
    sentences = [_sentence_ids(lm, stereo), _sentence_ids(lm, anti)]
    spans = _spans(*sentences)
    out = {m: [] for m in ("ll", "aul_c", "aula_c", "cps_c", "sss_c")}
    for ids, (equal, diff) in zip(sentences, spans):
        row = [lm.bos_id, *ids] if policy == "bos" else list(ids)
        gold, _, received = token_logprobs(lm, row, attention=True)
        # gold[k] is log P(row[k + 1] | row[:k + 1]): sentence token j sits at row position j + offset
        offset = 1 if policy == "bos" else 0
        logp = {j: gold[j + offset - 1] for j in range(len(ids)) if j + offset >= 1}
        att = {j: received[j + offset] for j in logp}
        scored = sorted(logp)
        values = np.array([logp[j] for j in scored])
        out["ll"].append(float(values.sum()))
        out["aul_c"].append(float(values.mean()))
        out["aula_c"].append(float(np.sum(np.array([att[j] for j in scored]) * values) / len(values)))
        u = [logp[j] for j in equal if j in logp]
        m = [logp[j] for j in diff if j in logp]
        out["cps_c"].append(float(np.sum(u)))
        out["sss_c"].append(float(np.mean(m)) if m else float("nan"))
    return {k: tuple(v) for k, v in out.items()}


# ---------------------------------------------------------------------------------------
# The peers, line by line
# ---------------------------------------------------------------------------------------


@torch.inference_mode()
def lm_eval_loglikelihood(model, tokenizer, context: str, continuation: str, max_length: int = 2048) -> tuple[float, bool]:
    """lm-evaluation-harness's (log-likelihood, is_greedy) of one request, batch size 1 (HFLM, causal)."""
    prefix_token_id = tokenizer.bos_token_id if tokenizer.bos_token_id is not None else tokenizer.eos_token_id
    if context == "":
        context_enc, continuation_enc = [prefix_token_id], tokenizer.encode(continuation, add_special_tokens=False)
    else:  # not used by crows_pairs (doc_to_text is "")
        raise NotImplementedError
    inp = torch.tensor((context_enc + continuation_enc)[-(max_length + 1) :][:-1], dtype=torch.long)
    (inplen,) = inp.shape
    multi_logits = F.log_softmax(model(inp[None]).logits, dim=-1)
    contlen = len(continuation_enc)
    logits = multi_logits[0][inplen - contlen : inplen].unsqueeze(0)
    greedy_tokens = logits.argmax(dim=-1)
    cont_toks = torch.tensor(continuation_enc, dtype=torch.long).unsqueeze(0)
    max_equal = bool((greedy_tokens == cont_toks).all())
    logits = torch.gather(logits, 2, cont_toks.unsqueeze(-1)).squeeze(-1)
    return float(logits.sum()), max_equal


def lm_eval_crows_pairs(model, tokenizer, pairs) -> dict:
    """crows_pairs_english: per pair (ll_more, ll_less) and the task's mean `acc` and `likelihood_diff` (process_results)."""
    lls, accs, diffs = [], [], []
    for p in pairs:
        l1, _ = lm_eval_loglikelihood(model, tokenizer, "", "" + p.sent_stereo)  # target_delimiter ""
        l2, _ = lm_eval_loglikelihood(model, tokenizer, "", "" + p.sent_anti)
        lls.append((l1, l2))
        diffs.append(abs(l1 - l2))
        accs.append(1.0 if l1 > l2 else 0.0)
    return {"ll": lls, "acc": float(np.mean(accs)), "likelihood_diff": float(np.mean(diffs))}


@torch.inference_mode()
def bias_bench_joint_probability(model, tokenizer, sentence: str) -> float:
    """bias-bench's `_joint_log_probability`: the geometric mean token probability (GPT-2-style tokenizers)."""
    start_token = torch.tensor(tokenizer.encode("<|endoftext|>")).unsqueeze(0)
    initial_token_probabilities = model(start_token)
    initial_token_probabilities = torch.softmax(initial_token_probabilities[0], dim=-1)
    tokens = tokenizer.encode(sentence)
    tokens_tensor = torch.tensor(tokens).unsqueeze(0)
    joint_sentence_probability = [initial_token_probabilities[0, 0, tokens[0]].item()]
    output = torch.softmax(model(tokens_tensor)[0], dim=-1)
    for idx in range(1, len(tokens)):
        joint_sentence_probability.append(output[0, idx - 1, tokens[idx]].item())
    assert len(tokens) == len(joint_sentence_probability)
    score = np.sum([np.log2(i) for i in joint_sentence_probability])
    score /= len(joint_sentence_probability)
    return float(np.power(2, score))


def bias_bench_crows(model, tokenizer, pairs) -> dict:
    """bias-bench's `_likelihood_score_generative` over `pairs` (sent1/sent2 by direction, as its `_read_data`)."""
    total_stereo = total_antistereo = stereo_score = antistereo_score = neutral = 0
    scores = []
    for p in pairs:
        sent1, sent2 = (p.sent_stereo, p.sent_anti) if p.direction == "stereo" else (p.sent_anti, p.sent_stereo)
        score1, score2 = bias_bench_joint_probability(model, tokenizer, sent1), bias_bench_joint_probability(model, tokenizer, sent2)
        scores.append((score1, score2) if p.direction == "stereo" else (score2, score1))
        if score1 == score2:
            neutral += 1
        elif p.direction == "stereo":
            total_stereo += 1
            stereo_score += score1 > score2
        elif p.direction == "antistereo":
            total_antistereo += 1
            antistereo_score += score2 > score1
    n = len(pairs)
    out = {"scores": scores, "metric_score": round((stereo_score + antistereo_score) / n * 100, 2), "neutral": round(neutral / n * 100, 2)}
    if total_stereo:
        out["stereotype_score"] = round(stereo_score / total_stereo * 100, 2)
    if total_antistereo:
        out["anti_stereotype_score"] = round(antistereo_score / total_antistereo * 100, 2)
    return out


@torch.inference_mode()
def oba_calc_ll(model, tokenizer, input_text: str) -> float:
    """Oba et al.'s `calc_ll(..., cf_context=None)`: -CrossEntropyLoss of the shifted logits (float32)."""
    input_ids = tokenizer.encode(input_text, return_tensors="pt")
    label_ids = input_ids.clone()
    outputs = model(input_ids=input_ids, labels=label_ids)
    shift_logits = outputs.logits[:, 0:-1, :].contiguous()
    shift_labels = label_ids[:, 1:].contiguous()
    if shift_logits.dtype != torch.float32:
        shift_logits = shift_logits.to(torch.float32)
    loss = torch.nn.CrossEntropyLoss()(shift_logits.view(-1, shift_logits.size(-1)), shift_labels.view(-1))
    return float((-1 * loss).item())


def oba_evaluate(model, tokenizer, pairs) -> dict:
    """Oba et al.'s `evaluate` without preambles: (RBS, accuracy-based score) and the per-pair log-likelihoods."""
    scores, lls, biased = [], [], 0
    for p in pairs:
        pro, anti = oba_calc_ll(model, tokenizer, p.sent_stereo), oba_calc_ll(model, tokenizer, p.sent_anti)
        lls.append((pro, anti))
        scores.append(pro - anti)
        biased += pro > anti
    return {"ll": lls, "rbs": float(np.mean(scores)), "acc_score": round((biased / len(pairs)) * 100, 2)}
