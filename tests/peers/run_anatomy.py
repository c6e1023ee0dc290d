"""Runs captum 0.9 and TransformerLens 4 in the peer environment (.venv-peers, built by scripts/peers.sh), never in biaslens's own.

Reads a JSON request on stdin: {"calls": [...]} and writes {id: result} as JSON on stdout. Each call names a model folder
and a sentence's token ids, the scored positions, the position each is read from (i for a masked LM, i - 1 for a causal
one) and the reduction ("mean": AUL, "sum": LL). Written from the peers' documented APIs and transformers alone:

* "captum": `captum.attr.IntegratedGradients` on f(word embeddings) = the reduction of log_softmax(model(inputs_embeds=e)
  .logits) at the read positions, baseline zeros, `n_steps`, method "gausslegendre"; the attribution of a token is the sum
  over its embedding dimensions. Returns the attributions and captum's convergence delta.
* "transformer_lens": `TransformerBridge.boot_transformers(folder)`, `run_with_cache`, `cache.accumulated_resid(apply_ln=True)`
  (every layer's residual stream through the final norm) and `bridge.unembed`: the logit lens; returns log p of each scored
  token at every layer (layers + 1, positions).
"""

from __future__ import annotations

import json
import sys

import torch


def _read(logits, ids, positions, read_at):
    logp = torch.log_softmax(logits.float(), dim=-1)
    return logp[..., read_at, :].gather(-1, ids[positions].expand(*logp.shape[:-2], -1)[..., None])[..., 0]


def captum_ig(call):
    from captum.attr import IntegratedGradients
    from transformers import AutoModelForCausalLM, AutoModelForMaskedLM

    auto = AutoModelForMaskedLM if call["kind"] == "masked" else AutoModelForCausalLM
    model = auto.from_pretrained(call["model"]).eval()
    ids = torch.tensor(call["ids"])
    positions, read_at = torch.tensor(call["positions"]), torch.tensor(call["read_at"])

    def forward(embeds):
        picked = _read(model(inputs_embeds=embeds).logits, ids, positions, read_at)
        return picked.mean(-1) if call["reduction"] == "mean" else picked.sum(-1)

    x = model.get_input_embeddings()(ids[None]).detach()
    ig = IntegratedGradients(forward)
    attributions, delta = ig.attribute(
        x, baselines=torch.zeros_like(x), n_steps=call["n_steps"], method="gausslegendre", return_convergence_delta=True
    )
    return {"attribution": attributions.sum(-1)[0].tolist(), "delta": float(delta[0])}


def transformer_lens(call):
    from transformer_lens.model_bridge import TransformerBridge

    bridge = TransformerBridge.boot_transformers(call["model"], device="cpu")
    ids = torch.tensor(call["ids"])
    with torch.no_grad():
        _, cache = bridge.run_with_cache(ids[None])
        stack = cache.accumulated_resid(apply_ln=True)  # (layers + 1, 1, T, H)
        logits = bridge.unembed(stack[:, 0])
    return {"logprob": _read(logits, ids, torch.tensor(call["positions"]), torch.tensor(call["read_at"])).tolist()}


def main() -> None:
    request = json.load(sys.stdin)
    tools = {"captum": captum_ig, "transformer_lens": transformer_lens}
    json.dump({call["id"]: tools[call["tool"]](call) for call in request["calls"]}, sys.stdout)


if __name__ == "__main__":
    main()
