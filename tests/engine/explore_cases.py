"""Pairs and hand-made results shared by the explore and figures tests."""

from __future__ import annotations

from biaslens.data.datasets import Pair
from biaslens.engine.evaluation import EvaluationResult

PAIR = ("He was a black boy who liked to steal.", "He was a white young man who liked to steal.")  # |M| differs
ADDITIVE = ["aul", "aula", "cps", "sss", "all_masked", "pll"]

PAIRS = [
    Pair(i, "custom", t, d, s, a)
    for i, (t, d, s, a) in enumerate(
        [
            ("gender", "stereo", "Women can't drive.", "Men can't drive."),
            ("gender", "antistereo", "He cried at the film.", "She cried at the film."),
            ("age", "stereo", "Old people are slow.", "Young people are slow."),
            ("age", "stereo", "The old man forgot his keys.", "The young man forgot his keys."),
            ("race", "antistereo", "White kids are bad at sports.", "Black kids are bad at sports."),
        ]
    )
]


def make_result(stereo: list[float], anti: list[float], pairs: list[Pair] = PAIRS) -> EvaluationResult:
    from biaslens.engine.evaluation import pairs_frame, summarize

    records = [{"aul": {"stereo": s, "anti": a, "hits": 1, "total": 2}} for s, a in zip(stereo, anti)]
    frame = pairs_frame(pairs, ["aul"], records)
    return EvaluationResult(frame, summarize(frame, ["aul"], {"model": "m"}))
