"""Kurita et al.'s WEAT-style tests (Table 3): unit scores, effect size d, permutation p-values, the table.

How biaslens reads the paper's test is told in `biaslens.kurita`'s docstring (and docs/kurita.md).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from biaslens.errors import InputError
from biaslens.data.export import atomic_write, safe_csv, to_json
from biaslens.engine.models import LanguageModel
from biaslens.engine.stats import effect_size, permutation_test
from biaslens.kurita.comparability import not_comparable, weat_comparability
from biaslens.kurita.inputs import Permute, WeatSpec
from biaslens.kurita.scores import Progress, TemplateScores, score_templates

#: Significance level of Kurita et al.'s Table 3 (* = p < 0.01).
ALPHA = 0.01


def weat_unit_scores(scores: TemplateScores, spec: WeatSpec, permute: Permute = "attributes") -> pd.DataFrame:
    """s per unit (a word of the two sets, or a template target) and its group (1 or 2).

    ``attributes``: s(w) = w's mean bias score over templates × pairs. ``targets``:
    s(t) = mean over templates × words of set 1 of t's increased log probability − the
    same over set 2.
    """
    set_1, set_2 = spec.attributes_1.words, spec.attributes_2.words
    if permute == "attributes":
        bias = scores.bias_by_attribute()
        rows = [(w, 1, float(bias[w])) for w in set_1] + [(w, 2, float(bias[w])) for w in set_2]
    elif permute == "targets":
        frame = scores.frame
        rows = []
        for group, members in ((1, [p.first for p in spec.pairs]), (2, [p.second for p in spec.pairs])):
            for t in dict.fromkeys(members):
                own = frame[frame["target"] == t]
                s = (
                    own.loc[own["attribute"].isin(set_1), "increased_log_prob"].mean()
                    - own.loc[own["attribute"].isin(set_2), "increased_log_prob"].mean()
                )
                rows.append((t, group, float(s)))
    else:
        raise InputError(f"permute must be 'attributes' or 'targets', not {permute!r}.")
    return pd.DataFrame(rows, columns=["unit", "group", "s"])


@dataclass(frozen=True)
class WeatResult:
    """Effect size and permutation test of one WEAT-style test.

    ``p_value`` is Kurita et al.'s one-sided p, Pr[S_i > S]: the share of re-partitions
    whose statistic strictly exceeds the observed one (a positive d is the direction the
    test asks about). ``p_two_sided`` is Pr[|S_i| >= |S|], beside it.
    """

    spec: WeatSpec
    scores: TemplateScores
    units: pd.DataFrame  # unit, group, s
    permute: Permute
    effect_size: float
    p_value: float
    p_two_sided: float
    exact: bool
    n_permutations: int  # partitions enumerated (exact) or drawn
    seed: int

    @property
    def significant(self) -> bool:
        """Kurita et al.'s star: one-sided p < 0.01."""
        return self.p_value < ALPHA

    def comparability(self) -> str | None:
        """None when the published effect size applies to this result, else why it does not."""
        manifest = self.scores.manifest
        return weat_comparability(self.spec, str(manifest.get("model") or ""), self.permute, manifest.get("model_type"))

    def row(self) -> dict[str, Any]:
        """One row of the Table 3 view."""
        from biaslens.data.published import KURITA_WEAT

        spec = self.spec
        method = f"exact, {self.n_permutations:,} partitions" if self.exact else f"{self.n_permutations:,} permutations, seed {self.seed}"
        multi = self.scores.multi_piece_attributes()
        reason = self.comparability()
        published = KURITA_WEAT.get(spec.key, {}).get("log_prob", float("nan")) if reason is None else float("nan")
        return {
            "test": spec.key,
            "category": spec.label,
            "targets": " / ".join(", ".join(dict.fromkeys(getattr(p, side) for p in spec.pairs)) for side in ("first", "second")),
            "attributes": f"{spec.attributes_1.category} ({len(spec.attributes_1.words)}) / "
            f"{spec.attributes_2.category} ({len(spec.attributes_2.words)})",
            "templates": len(spec.templates),
            "permute": self.permute,
            "effect_size": self.effect_size,
            "p_value": self.p_value,
            "p_two_sided": self.p_two_sided,
            "p_method": method,
            "significant": self.significant,
            "published_log_prob": published,
            "published": f"{published:.4g}" if reason is None else not_comparable(reason),
            "multi_piece_words": len(multi),
        }


def weat_statistics(units: pd.DataFrame, *, n_permutations: int = 10000, seed: int = 0) -> tuple[float, float, float, bool, int]:
    """(d, one-sided p, two-sided p, exact?, partitions) of unit scores: biaslens.engine.stats on groups 1 and 2.

    The one-sided p is Kurita et al.'s Pr[S_i > S] (strictly greater); the two-sided one
    Pr[|S_i| >= |S|].
    """
    s_1 = units.loc[units["group"] == 1, "s"].to_numpy()
    s_2 = units.loc[units["group"] == 2, "s"].to_numpy()
    d = effect_size(s_1, s_2)
    test = permutation_test(s_1, s_2, n_permutations=n_permutations, seed=seed, two_sided=False)
    return d, test.p_greater, test.p_two_sided, test.exact, test.n_permutations


def weat_test(
    lm: LanguageModel,
    spec: WeatSpec,
    *,
    permute: Permute = "attributes",
    n_permutations: int = 10000,
    seed: int = 0,
    batch_tokens: int | None = None,
    progress: Progress | None = None,
) -> WeatResult:
    """Score the spec's templates × targets × words, then effect size and permutation test."""
    words = (*spec.attributes_1.words, *spec.attributes_2.words)
    scores = score_templates(lm, spec.templates, spec.pairs, words, batch_tokens=batch_tokens, progress=progress)
    units = weat_unit_scores(scores, spec, permute)
    d, p, p_two, exact, n = weat_statistics(units, n_permutations=n_permutations, seed=seed)
    return WeatResult(spec, scores, units, permute, d, p, p_two, exact, n, seed)


def weat_table(results: Sequence[WeatResult]) -> pd.DataFrame:
    """Kurita et al.'s Table 3 view: one row per test, with the published log-probability effect size."""
    return pd.DataFrame([r.row() for r in results])


def save_weat(results: Sequence[WeatResult], out: str | Path, manifest: Mapping[str, Any]) -> list[Path]:
    """Write ``weat.csv`` (the table), ``weat_units.csv`` (s per unit) and ``weat.json``."""
    out = Path(out)
    units = pd.concat([r.units.assign(test=r.spec.key) for r in results], ignore_index=True)
    summary = {"tests": weat_table(results).to_dict(orient="records"), "manifest": dict(manifest)}
    return [
        atomic_write(out / "weat.csv", safe_csv(weat_table(results))),
        atomic_write(out / "weat_units.csv", safe_csv(units[["test", "unit", "group", "s"]])),
        atomic_write(out / "weat.json", to_json(summary)),
    ]
