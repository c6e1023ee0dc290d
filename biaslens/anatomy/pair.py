"""All three anatomy views of one pair at once (`anatomize`), and the files `biaslens anatomy` writes (`PairAnatomy.save`).

`attribution.csv` (sentence, position, token, text, method, value), `logit_lens.csv` (sentence, layer, position, token, text, logp),
`heads.csv` (layer, head, margin_change, aula_share) and `summary.json` (the metric, the margin, the completeness errors,
the margin per layer, the heads that move the margin most, the model's manifest).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from biaslens.anatomy.attribution import DEFAULT_STEPS, PairAttribution, attribute_sentence
from biaslens.anatomy.focus import same_metric
from biaslens.anatomy.heads import HeadEffects, head_effects_of
from biaslens.anatomy.lens import PairLens, lens_sentence
from biaslens.data.export import atomic_write, safe_csv, to_json
from biaslens.engine.alignment import align_pair
from biaslens.engine.lm import LanguageModel

#: The files `PairAnatomy.save` writes.
FILES = ("attribution.csv", "logit_lens.csv", "heads.csv", "summary.json")


@dataclass(frozen=True)
class PairAnatomy:
    """One pair's attribution, logit lens and heads, under one metric in focus."""

    attribution: PairAttribution
    lens: PairLens
    heads: HeadEffects
    manifest: dict[str, Any]

    @property
    def metric(self) -> str:
        return self.heads.metric

    @property
    def margin(self) -> float:
        return self.heads.margin

    def summary(self, top: int = 5) -> dict[str, Any]:
        """What summary.json holds (module docstring)."""
        heads = self.heads.frame().head(top)
        return {
            "metric": self.metric,
            "sentences": {"stereo": self.attribution.stereo.text, "anti": self.attribution.anti.text},
            "margin": self.margin,
            "attribution": {"n_steps": self.attribution.stereo.n_steps, "completeness": self.attribution.completeness().to_dict(orient="records")},
            "margin_per_layer": self.lens.margins.tolist(),
            "heads": {"aula_metric": self.heads.aula_metric, "aula_margin": self.heads.aula_margin, "top": heads.to_dict(orient="records")},
            "manifest": self.manifest,
        }

    def save(self, out: str | Path) -> list[Path]:
        """Write `FILES` into the folder `out` (created); returns their paths."""
        folder = Path(out)
        folder.mkdir(parents=True, exist_ok=True)
        tables = (self.attribution.frame(), self.lens.frame(), self.heads.frame())
        written = [atomic_write(folder / name, safe_csv(frame)) for name, frame in zip(FILES, tables)]
        return [*written, atomic_write(folder / FILES[-1], to_json(self.summary()))]


def anatomize(
    lm: LanguageModel, sent_stereo: str, sent_anti: str, *, metric: str | None = None, n_steps: int = DEFAULT_STEPS, aula: bool = True
) -> PairAnatomy:
    """Attribution (`attribution.attribute_pair`), the logit lens (`lens.logit_lens_pair`) and the heads
    (`heads.head_effects`) of one pair, each sentence prepared once."""
    a, b = same_metric(lm, sent_stereo, sent_anti, metric)
    attribution = PairAttribution(
        attribute_sentence(lm, a, n_steps=n_steps), attribute_sentence(lm, b, n_steps=n_steps), align_pair(a.encoding, b.encoding)
    )
    lens = PairLens(lens_sentence(lm, a), lens_sentence(lm, b))
    heads = head_effects_of(lm, a, b, aula=aula)
    manifest = lm.manifest(metric=a.metric, n_steps=n_steps, view="anatomy")
    return PairAnatomy(attribution, lens, heads, manifest)


def settling_layer(margins: np.ndarray) -> int:
    """The first layer from which the margin keeps the sign it ends with (the last layer's)."""
    final = np.sign(margins[-1])
    layer = len(margins) - 1
    while layer > 0 and np.sign(margins[layer - 1]) == final:
        layer -= 1
    return layer


__all__ = ["FILES", "PairAnatomy", "anatomize", "settling_layer"]
