"""The metric registry owns every per-metric fact: the checks a new metric's entry must pass.

Adding a metric to `biaslens.engine.metrics.METRICS` is checked here without touching this file:
its facts are well-formed, and the engine, the explorer and the inspector follow them.
"""

from __future__ import annotations

import numpy as np
import pytest

from biaslens.analyses import explore
from biaslens.figures import charts as figures
from biaslens.analyses.papers import PAIRED_TOKENS
from biaslens.engine.cache import cache_key
from biaslens.errors import InputError
from biaslens.engine.evaluation import _record_key, inspect_pair, pairs_frame
from biaslens.data.datasets import Pair
from biaslens.engine.metrics import (
    ACCURACY_UNITS,
    METRICS,
    MODEL_KINDS,
    REDUCTIONS,
    SentenceScore,
    metrics_for,
    pair_accuracy,
    pair_columns,
    registry,
)
from biaslens.engine.options import Compat

PAIR = ("He was a black boy who liked to steal.", "He was a white young man who liked to steal.")


@pytest.mark.parametrize("key", list(METRICS))
def test_every_entry_is_well_formed(key):
    m = METRICS[key]
    assert m.key == key and m.name and m.long_name and m.formula and m.summary and m.citation and m.accuracy_positions
    # The card reads "Token accuracy over <positions>.": a noun phrase (AULA's said "over as AUL.", issue 21 item 10)
    assert m.accuracy_positions.split()[0] in ("every", "the"), m.accuracy_positions
    assert m.pass_kind in ("unmasked", "masked") and m.score is not None
    assert m.kinds and set(m.kinds) <= set(MODEL_KINDS)
    if m.analogue:  # the counterpart of the other kind points back
        assert METRICS[m.analogue].analogue == key and set(METRICS[m.analogue].kinds).isdisjoint(m.kinds)
    if "causal" in m.kinds:  # a causal model has one pass, left to right
        assert m.pass_kind == "unmasked" and not m.queries(None, False)  # type: ignore[arg-type]
    assert m.reduction is None or m.reduction in REDUCTIONS
    assert m.accuracy_unit in ACCURACY_UNITS
    assert m.token_measure in figures.TOKEN_MEASURES
    assert all(mode in {c.value for c in Compat} for mode, _ in m.cache_tags)
    assert m.columns == (f"{key}_stereo", f"{key}_anti", f"{key}_hits", f"{key}_total") == pair_columns(key)
    if m.paired_tokens:  # Table 1 pairs a masked metric with AUL's unmasked pass
        assert m.pass_kind == "masked"
    if m.needs_attention:
        assert m.pass_kind == "unmasked"


def test_the_facts_that_were_spread_over_other_modules():
    # explore's reductions, the inspector's measures, Table 1's pairs and the cache tags, as they were before the registry held them
    assert {k: m.reduction for k, m in METRICS.items() if m.reduction} == {
        "aul": "mean",
        "aula": "weighted_mean",
        "cps": "sum",
        "sss": "mean",
        "all_masked": "mean",
        "pll": "sum",
        "ll": "sum",
        "aul_c": "mean",
        "aula_c": "weighted_mean",
        "cps_c": "sum",
        "sss_c": "mean",
    }
    assert [k for k, m in METRICS.items() if m.reduction and not m.additive_in_compat] == ["cps", "sss"]
    assert {k: METRICS[k].token_measure for k in ("aul", "aula", "cps", "sss", "all_masked")} == {
        "aul": "logprob",
        "aula": "aula_contribution",
        "cps": "cps_logprob",
        "sss": "logprob",
        "all_masked": "logprob",
    }
    assert [m.token_column for m in METRICS.values() if m.token_column] == [
        "cps_logprob",
        "sss_logprob",
        "all_masked_logprob",
        "pll_logprob",
        "cps_c_logprob",
        "sss_c_logprob",
    ]
    assert PAIRED_TOKENS == {"cps": "unmodified (U) tokens", "sss": "modified (M) tokens"}
    assert [k for k, m in METRICS.items() if m.needs_attention] == ["aula", "aula_c"]
    assert METRICS["sss"].cache_tag("default") == "sss@instance-accuracy" and METRICS["sss"].cache_tag("kaneko2022") == "sss"
    # AULA-c's weights average over the rows that can see a token since this tag: records of the all-rows reading stay unread
    assert all(METRICS["aula_c"].cache_tag(mode) == "aula_c@visible-rows" for mode in ("default", "kaneko2022"))
    assert all(m.cache_tag(mode) == k for k, m in METRICS.items() if k not in ("sss", "aula_c") for mode in ("default", "kaneko2022"))


def test_result_cache_keys_are_the_ones_older_caches_hold(tiny_bert):
    p = Pair(0, "test", "gender", "stereo", "Women can't drive.", "Men can't drive.")
    for mode in Compat:
        key = _record_key(tiny_bert, mode)
        for m in METRICS:
            tag = "sss@instance-accuracy" if (m, mode.value) == ("sss", "default") else "aula_c@visible-rows" if m == "aula_c" else m
            assert key(p, m) == cache_key(tiny_bert.fingerprint, str(tiny_bert.dtype), tag, mode.value, p.sent_stereo, p.sent_anti)


def _score(ranks):
    rank = np.asarray(ranks)
    return SentenceScore(0.0, tuple(range(len(rank))), np.zeros(len(rank)), int(np.sum(rank == 1)), len(rank), rank=rank)


def test_pair_accuracy_counts_what_the_registry_says():
    a, b = _score([1, 2]), _score([1])
    for key, m in METRICS.items():
        assert pair_accuracy(key, a, b, True) == (2, 3)  # kaneko2022: tokens, always
        assert pair_accuracy(key, a, b, False) == ((1, 1) if m.accuracy_unit == "instances" else (2, 3))


def test_pairs_frame_writes_each_metrics_columns():
    p = Pair(3, "test", "gender", "stereo", "a", "b")
    records = [{m: {"stereo": -1.0, "anti": -2.0, "hits": 1, "total": 2} for m in METRICS}]
    frame = pairs_frame([p], list(METRICS), records)
    assert list(frame.columns[6:]) == [c for m in METRICS.values() for c in m.columns]


@pytest.fixture(scope="module")
def inspections(tiny_bert, tiny_gpt2):
    """Every metric of each kind on one pair: a masked and a causal model."""
    return {lm.kind: inspect_pair(lm, *PAIR, metrics=metrics_for(lm.kind)) for lm in (tiny_bert, tiny_gpt2)}


@pytest.mark.parametrize("key", list(METRICS))
def test_the_explorer_and_the_inspector_follow_the_registry(inspections, key):
    m = METRICS[key]
    inspection = inspections[m.kinds[0]]
    if m.reduction is None:
        with pytest.raises(InputError, match="not a sum"):
            explore.token_contributions(inspection, key, "stereo")
    else:
        for side in ("stereo", "anti"):
            shares = explore.token_contributions(inspection, key, side)
            assert shares.sum() == pytest.approx(getattr(inspection, side).scores[key].value, abs=1e-9)
    frame = inspection.stereo.token_frame()
    if m.token_column is not None:
        score = inspection.stereo.scores[key]
        np.testing.assert_allclose(frame[m.token_column].to_numpy()[list(score.positions)], score.logprob)
    assert m.token_measure in frame


@pytest.mark.parametrize("key", [k for k, m in METRICS.items() if m.reduction and not m.additive_in_compat])
def test_metrics_not_additive_in_kaneko2022_are_refused(tiny_bert, key):
    compat = inspect_pair(tiny_bert, *PAIR, metrics=[key], compat="kaneko2022")
    with pytest.raises(InputError, match="kaneko2022"):
        explore.token_contributions(compat, key, "stereo")


def test_a_registry_keeps_its_entries_in_order_and_refuses_a_key_given_twice():
    from biaslens.engine.conventions import CONVENTIONS
    from biaslens.lab.settings import SCENARIOS

    assert list(registry(METRICS.values())) == list(METRICS)
    for table in (METRICS, CONVENTIONS, SCENARIOS):
        assert all(key == entry.key for key, entry in table.items())
    with pytest.raises(ValueError, match="the registry gives the key 'aul' twice"):
        registry([METRICS["aul"], METRICS["cps"], METRICS["aul"]])


def test_a_metric_pass_looks_the_registry_up_once_for_what_the_pass_needs():
    from biaslens.engine.lm import Encoding
    from biaslens.engine.metrics import SentenceInput, metric_pass

    enc = Encoding("a b c", (101, 1, 2, 3, 102), (True, False, False, False, True), ("[CLS]", "a", "b", "c", "[SEP]"))
    s = SentenceInput(enc, modified=(2,), unmodified=(1, 3))
    scoring = metric_pass(["cps", "pll", "aula"], [s, s])
    assert [m.key for m in scoring.metrics] == ["cps", "pll", "aula"] and scoring.needs_unmasked and scoring.needs_attention
    # CPS masks each unmodified token alone; PLL asks the same query (run once, and once for the repeated sentence) and
    # then masks the rest alone; AULA reads the unmasked pass and asks nothing.
    assert [(q.mask, q.singly) for q in scoring.queries] == [((1, 3), True), ((2,), True)]
    assert not metric_pass(["cps", "sss"], [s]).needs_unmasked and not metric_pass(["aul"], [s]).needs_attention
    assert [q.mask for q in metric_pass(["sss"], [s]).queries] == [(2,)]
