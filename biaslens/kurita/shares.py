"""Kurita et al.'s attribute lists (Table 5): the share of attributes more associated with the first target, per list."""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from biaslens.kurita.comparability import not_comparable, share_comparability
from biaslens.kurita.scores import TemplateScores


def shares_table(lists: Mapping[str, TemplateScores], published: Mapping[str, str | None] | None = None) -> pd.DataFrame:
    """One row per attribute list: share of attributes more associated with the first target (Table 5).

    ``published`` maps a list name to a key of `published.KURITA_ATTRIBUTE_SHARES`. The
    published share fills ``published_share`` only when `share_comparability` finds the
    list, template, targets and model the paper's; ``published`` says the share, or
    "not comparable: <reason>".
    """
    from biaslens.data.published import KURITA_ATTRIBUTE_SHARES

    rows = []
    for name, scores in lists.items():
        share = scores.share()
        key = (published or {}).get(name)
        reason = share_comparability(key, scores) if key else None
        value = KURITA_ATTRIBUTE_SHARES.get(key, float("nan")) if key and reason is None else float("nan")
        rows.append(
            {
                "list": name,
                "templates": " ; ".join(t.line for t in scores.templates),
                "pairs": ", ".join(p.label for p in scores.pairs),
                "n": share.n,
                "first": share.first,
                "second": share.second,
                "ties": share.ties,
                "share_first": share.percent,
                "ci_low": share.ci_low,
                "ci_high": share.ci_high,
                "published_share": value,
                "published": (f"{value:.1f}" if reason is None else not_comparable(reason)) if key else "",
            }
        )
    return pd.DataFrame(rows)
