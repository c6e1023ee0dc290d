"""The logit lens: each token's log p read at every layer, and the pair's margin layer by layer: at which depth the
preference appears.

Layer 0 is the embeddings (the first block's input), layer l the output of block l; each is read as the model reads its
last one: through the model's final norm (a causal model's `ln_f` / `norm`; a masked LM has none, its head holds its own
norm) and its LM head, at the position the metric reads (`focus.py`). The last layer is the model's own log p, the final
norm applied once (the tests check it equal to `unmasked_pass` within 1e-5, and the peer test the whole lens equal to
TransformerLens's `accumulated_resid(apply_ln=True)` on GPT-2). Intermediate layers were never trained to be read this
way: a low log p at layer 3 says the preference is not yet *linearly readable through the final head*, not that the
model has not computed it (docs/anatomy.md).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

from biaslens.anatomy.focus import FocusSentence, focus_sentence, require_head, same_metric
from biaslens.engine.lm import LanguageModel


@dataclass(frozen=True)
class SentenceLens:
    """One sentence's scored tokens read at every layer: `logprob[l, k]` is token `positions[k]`'s log p at layer l."""

    text: str
    tokens: tuple[str, ...]
    texts: tuple[str, ...]  # each token as the text it covers, for people (`LanguageModel.token_texts`)
    metric: str
    positions: np.ndarray
    logprob: np.ndarray  # (layers + 1, scored positions)
    reduction: str

    @property
    def scores(self) -> np.ndarray:
        """The sentence's score (the metric in focus) read at each layer: (layers + 1,)."""
        return self.logprob.mean(axis=1) if self.reduction == "mean" else self.logprob.sum(axis=1)

    def frame(self, sentence: str = "") -> pd.DataFrame:
        """logit_lens.csv's rows: sentence, layer, position, token, text (what the token covers), logp."""
        layers, k = self.logprob.shape
        return pd.DataFrame(
            {
                "sentence": sentence,
                "layer": np.repeat(np.arange(layers), k),
                "position": np.tile(self.positions, layers),
                "token": np.tile(np.asarray([self.tokens[p] for p in self.positions], dtype=object), layers),
                "text": np.tile(np.asarray([self.texts[p] for p in self.positions], dtype=object), layers),
                "logp": self.logprob.reshape(-1),
            }
        )


@dataclass(frozen=True)
class PairLens:
    """Both sentences of a pair through the logit lens, and the margin per layer."""

    stereo: SentenceLens
    anti: SentenceLens

    @property
    def margins(self) -> np.ndarray:
        """stereo - anti at each layer (layer 0 = embeddings; the last = the metric's margin)."""
        return self.stereo.scores - self.anti.scores

    def frame(self) -> pd.DataFrame:
        return pd.concat([self.stereo.frame("stereo"), self.anti.frame("anti")], ignore_index=True)

    def margin_frame(self) -> pd.DataFrame:
        """layer, stereo, anti, margin: the score of each sentence and the margin read at each layer."""
        return pd.DataFrame({"layer": np.arange(len(self.margins)), "stereo": self.stereo.scores, "anti": self.anti.scores, "margin": self.margins})


def lens_sentence(lm: LanguageModel, s: FocusSentence) -> SentenceLens:
    """The logit lens of a prepared sentence (`focus.focus_sentence`)."""
    require_head(lm, "The logit lens")
    with torch.inference_mode():
        states = lm.layer_states(s.ids.to(lm.device))
        per_layer = [s.logprob(lm, lm.final_norm(h)) for h in states]
        if (s.read_at < 0).any():  # a first token read from the start context: that context through the lens too
            start = torch.tensor([list(lm.start_context or ())], device=lm.device)
            gold = s.encoding.ids[int(s.positions[0])]
            for row, h in zip(per_layer, lm.layer_states(start)):
                assert lm.project is not None
                row[0, 0] = torch.log_softmax(lm.project(lm.final_norm(h)[:, -1]).float(), dim=-1)[0, gold]
    logprob = torch.cat(per_layer).double().cpu().numpy()
    e = s.encoding
    return SentenceLens(e.text, e.tokens, lm.token_texts([e])[0], s.metric, s.positions, logprob, s.reduction)


def logit_lens(lm: LanguageModel, text: str, *, metric: str | None = None) -> SentenceLens:
    """Every scored token's log p at every layer of `lm` (module docstring), under the metric in focus."""
    return lens_sentence(lm, focus_sentence(lm, text, metric))


def logit_lens_pair(lm: LanguageModel, sent_stereo: str, sent_anti: str, *, metric: str | None = None) -> PairLens:
    """`logit_lens` of both sentences of a pair, and the margin per layer (`PairLens.margins`)."""
    a, b = same_metric(lm, sent_stereo, sent_anti, metric)
    return PairLens(lens_sentence(lm, a), lens_sentence(lm, b))


__all__ = ["PairLens", "SentenceLens", "lens_sentence", "logit_lens", "logit_lens_pair"]
