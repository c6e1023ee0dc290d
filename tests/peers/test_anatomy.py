"""The anatomy views against the interpretability peers themselves, run in the peer environment (tests/peers/run_anatomy.py):

* integrated gradients (`biaslens.anatomy.attribution.attribute`, 64 Gauss-Legendre points, zero word embeddings as the
  baseline) equal captum 0.9's `IntegratedGradients` on the same function within 1e-4, relative, per token, for masked
  (BERT, RoBERTa) and causal (GPT-2, Pythia) models; captum's convergence delta equals biaslens's completeness error;
* the logit lens (`biaslens.anatomy.lens.logit_lens`) equals TransformerLens 4's `accumulated_resid(apply_ln=True)` through
  `unembed` at every layer within 1e-4, on GPT-2 and Pythia whose norms carry non-trivial weights (a random model's norms
  are 1 and 0, which would hide a norm applied twice or not at all).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from biaslens.anatomy.attribution import attribute
from biaslens.anatomy.focus import focus_sentence
from biaslens.anatomy.lens import logit_lens
from biaslens.engine.models import load_model
from tests.peers.conftest import run_peer

pytestmark = pytest.mark.peers

TEXTS = ["The nurse said she was tired.", "Women don't know how to drive."]
TOL = 1e-4


@pytest.fixture(scope="module")
def normed_causal(causal_dirs, tmp_path_factory):
    """GPT-2 and Pythia with every norm's weight and bias drawn at random (seeded), saved where both sides load them."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    out = {}
    for family in ("gpt2", "pythia"):
        model = AutoModelForCausalLM.from_pretrained(causal_dirs[family])
        torch.manual_seed(7)
        with torch.no_grad():
            for name, param in model.named_parameters():
                if "ln" in name or "norm" in name:
                    param.add_(torch.randn_like(param) * 0.3)
        folder = tmp_path_factory.mktemp(f"normed-{family}")
        model.save_pretrained(folder)
        AutoTokenizer.from_pretrained(causal_dirs[family]).save_pretrained(folder)
        out[family] = folder
    return out


def _reading(lm, text):
    s = focus_sentence(lm, text)
    return {"ids": list(s.encoding.ids), "positions": s.positions.tolist(), "read_at": s.read_at.tolist(), "reduction": s.reduction}


def test_integrated_gradients_equal_captum(peers_python, model_dirs, causal_dirs):
    folders = {"bert-cased": model_dirs["bert-cased"], "roberta": model_dirs["roberta"], "gpt2": causal_dirs["gpt2"], "pythia": causal_dirs["pythia"]}
    ours, calls = {}, []
    for family, folder in folders.items():
        lm = load_model(str(folder))
        for k, text in enumerate(TEXTS):
            key = f"{family}/{k}"
            ours[key] = attribute(lm, text, n_steps=64)
            calls.append({"id": key, "tool": "captum", "model": str(folder), "kind": lm.kind, "n_steps": 64, **_reading(lm, text)})
    theirs = run_peer(peers_python, "run_anatomy.py", {"calls": calls})
    for key, mine in ours.items():
        want = np.asarray(theirs[key]["attribution"])
        scale = np.abs(want).max()
        assert np.all(np.abs(mine.integrated_gradients - want) <= TOL * np.maximum(np.abs(want), 1e-3 * scale)), (
            key,
            mine.integrated_gradients,
            want,
        )
        assert mine.completeness_error == pytest.approx(theirs[key]["delta"], abs=1e-5), key


def test_logit_lens_equals_transformer_lens(peers_python, normed_causal):
    ours, calls = {}, []
    for family, folder in normed_causal.items():
        lm = load_model(str(folder))
        for k, text in enumerate(TEXTS):
            key = f"{family}/{k}"
            ours[key] = logit_lens(lm, text)
            calls.append({"id": key, "tool": "transformer_lens", "model": str(folder), **_reading(lm, text)})
    theirs = run_peer(peers_python, "run_anatomy.py", {"calls": calls})
    for key, mine in ours.items():
        want = np.asarray(theirs[key]["logprob"])
        assert want.shape == mine.logprob.shape, key
        assert np.allclose(mine.logprob, want, rtol=TOL, atol=TOL), (key, np.abs(mine.logprob - want).max())
