"""Hand-written forward passes of BERT and GPT-2 from their weights, with one head zeroed: the reference the anatomy's
hooks (`biaslens/engine/internals.py`) are checked against. Written from the papers' equations and the weights' names,
one sentence, no batching, no transformers code: every layer's state (before GPT-2's final norm) and the logits.

`zero` is (layer, head) or None; the head's slice of the attention output (before the output projection) is zeroed.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F


def _attention(q, k, v, heads, causal, zero_head):
    """softmax(q k^T / sqrt(d)) v per head, (T, heads * d), with `zero_head`'s output zeroed."""
    t, width = q.shape
    d = width // heads
    q, k, v = (x.view(t, heads, d).transpose(0, 1) for x in (q, k, v))
    scores = q @ k.transpose(1, 2) / math.sqrt(d)
    if causal:
        scores = scores.masked_fill(torch.triu(torch.ones(t, t, dtype=torch.bool), 1), float("-inf"))
    out = torch.softmax(scores, dim=-1) @ v  # (heads, T, d)
    if zero_head is not None:
        out[zero_head] = 0
    return out.transpose(0, 1).reshape(t, width)


@torch.no_grad()
def gpt2_forward(model, ids, zero=None):
    """(states: embeddings and each block's output, logits) of GPT2LMHeadModel `model` on `ids`."""
    tr, cfg = model.transformer, model.config
    x = tr.wte.weight[ids] + tr.wpe.weight[torch.arange(len(ids))]
    states = [x]
    for layer, block in enumerate(tr.h):
        h = F.layer_norm(x, (cfg.n_embd,), block.ln_1.weight, block.ln_1.bias, cfg.layer_norm_epsilon)
        qkv = h @ block.attn.c_attn.weight + block.attn.c_attn.bias
        q, k, v = qkv.split(cfg.n_embd, dim=-1)
        a = _attention(q, k, v, cfg.n_head, True, zero[1] if zero and zero[0] == layer else None)
        x = x + a @ block.attn.c_proj.weight + block.attn.c_proj.bias
        h = F.layer_norm(x, (cfg.n_embd,), block.ln_2.weight, block.ln_2.bias, cfg.layer_norm_epsilon)
        m = F.gelu(h @ block.mlp.c_fc.weight + block.mlp.c_fc.bias, approximate="tanh")
        x = x + m @ block.mlp.c_proj.weight + block.mlp.c_proj.bias
        states.append(x)
    final = F.layer_norm(x, (cfg.n_embd,), tr.ln_f.weight, tr.ln_f.bias, cfg.layer_norm_epsilon)
    return states, final @ model.lm_head.weight.T


@torch.no_grad()
def bert_forward(model, ids, zero=None):
    """(states: embeddings and each layer's output, logits) of BertForMaskedLM `model` on `ids` (token type 0)."""
    bert, cfg = model.bert, model.config
    emb = bert.embeddings
    width, eps = cfg.hidden_size, cfg.layer_norm_eps
    x = emb.word_embeddings.weight[ids] + emb.position_embeddings.weight[torch.arange(len(ids))] + emb.token_type_embeddings.weight[0]
    x = F.layer_norm(x, (width,), emb.LayerNorm.weight, emb.LayerNorm.bias, eps)
    states = [x]
    for layer, block in enumerate(bert.encoder.layer):
        sa = block.attention.self
        q, k, v = (F.linear(x, m.weight, m.bias) for m in (sa.query, sa.key, sa.value))
        a = _attention(q, k, v, cfg.num_attention_heads, False, zero[1] if zero and zero[0] == layer else None)
        out = block.attention.output
        x = F.layer_norm(x + F.linear(a, out.dense.weight, out.dense.bias), (width,), out.LayerNorm.weight, out.LayerNorm.bias, eps)
        m = F.gelu(F.linear(x, block.intermediate.dense.weight, block.intermediate.dense.bias))
        x = F.layer_norm(
            x + F.linear(m, block.output.dense.weight, block.output.dense.bias),
            (width,),
            block.output.LayerNorm.weight,
            block.output.LayerNorm.bias,
            eps,
        )
        states.append(x)
    head = model.cls.predictions
    t = F.gelu(F.linear(x, head.transform.dense.weight, head.transform.dense.bias))
    t = F.layer_norm(t, (width,), head.transform.LayerNorm.weight, head.transform.LayerNorm.bias, eps)
    return states, F.linear(t, head.decoder.weight, head.bias)


def sentence_score(logits, ids, positions, read_previous, reduction):
    """The metric's score from full logits (T, V): log p of `positions`, read at i (masked) or i - 1 (causal)."""
    logp = torch.log_softmax(logits.float(), dim=-1)
    values = torch.stack([logp[p - 1 if read_previous else p, ids[p]] for p in positions]).double()
    return float(values.mean() if reduction == "mean" else values.sum())
