"""The metric arithmetic on hand-checkable numbers, and the registry."""

import math

import numpy as np
import pytest

from biaslens.errors import InputError
from biaslens.engine.metrics import METRICS, PAPER_METRICS, all_masked, aul, aula, check_compat, cps, parse_metrics, pll, sss


def test_aul_is_the_mean_log_probability():
    assert aul(np.log([0.5, 0.25])) == pytest.approx((math.log(0.5) + math.log(0.25)) / 2)


def test_aula_weights_by_attention_without_renormalising():
    logprob = np.array([-1.0, -3.0])
    attention = np.array([0.2, 0.1])  # sums to 0.3, not 1: not renormalised
    assert aula(logprob, attention) == pytest.approx((0.2 * -1.0 + 0.1 * -3.0) / 2)


def test_cps_is_a_sum_and_compat_rounds_to_three_decimals():
    logprob = np.array([-1.23456, -2.0])
    assert cps(logprob) == pytest.approx(-3.23456)
    assert cps(logprob, compat=True) == -3.235
    # Rounding creates ties that the default keeps apart.
    assert cps(np.array([-1.00001])) != cps(np.array([-1.00002]))
    assert cps(np.array([-1.00001]), compat=True) == cps(np.array([-1.00002]), compat=True)


def test_sss_default_takes_the_diagonal_compat_the_whole_matrix():
    matrix = np.array([[-1.0, -5.0], [-7.0, -3.0]])  # matrix[i, j] = log p(t_j at m_i)
    assert sss(matrix) == pytest.approx(-2.0)
    assert sss(matrix, compat=True) == pytest.approx(-4.0)
    # With one modified token both agree.
    assert sss(np.array([[-2.5]])) == sss(np.array([[-2.5]]), compat=True) == -2.5


def test_sss_of_an_empty_span_is_nan():
    assert math.isnan(sss(np.zeros((0, 0))))
    assert math.isnan(sss(np.zeros((0, 0)), compat=True))


def test_all_masked_mean_and_pll_sum():
    lp = np.array([-1.0, -2.0, -6.0])
    assert all_masked(lp) == pytest.approx(-3.0)
    assert pll(lp) == pytest.approx(-9.0)


def test_registry_describes_every_metric():
    assert set(PAPER_METRICS) <= set(METRICS)
    for key, m in METRICS.items():
        assert m.key == key
        assert m.name and m.long_name and m.formula and m.summary and m.citation
        assert m.ideal == 50.0
        assert "50" in m.direction
        assert m.pass_kind in ("unmasked", "masked")
        assert m.score is not None
    assert "biaslens" in METRICS["all_masked"].note  # own definition, labelled as such


def test_parse_metrics_validates_and_orders():
    assert parse_metrics("sss, aul,AUL") == ["aul", "sss"]
    assert parse_metrics(["all-masked"]) == ["all_masked"]
    assert parse_metrics(None) == list(PAPER_METRICS)
    with pytest.raises(InputError, match="Unknown metric foo"):
        parse_metrics("aul,foo")
    with pytest.raises(InputError):
        parse_metrics(" , ")


def test_compat_modes():
    assert check_compat("default") is False
    assert check_compat(None) is False
    assert check_compat("kaneko2022") is True
    with pytest.raises(InputError):
        check_compat("kaneko")
