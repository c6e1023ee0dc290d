"""The bias-lab sweep: cells equal separate lab runs, the analysis on a hand-made table, resuming, the CLI, the page.

Every model here is tiny (600 sentences, 12 steps of 32): whether a metric tracks the
planted bias is not tested (a 12-step model learns next to nothing), only that the sweep
computes what it says from what the lab computes.
"""

from __future__ import annotations

import itertools
import json
import math
from fractions import Fraction
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from biaslens import lab
from biaslens.figures import charts
from biaslens.lab import sweep
from biaslens.cli import main
from biaslens.cli.lab_sweep import format_ranking
from biaslens.report.sweep import OUTPUT_FILES
from biaslens.errors import InputError
from biaslens.engine.metrics import MASKED_METRICS
from biaslens.engine.models import load_model
from biaslens.analyses.sanity import model_verdict

TINY = lab.LabSettings(corpus_size=600, steps=12, batch_size=32)
#: 4 cells: nothing planted and total association, at ratios 1 and 3.
GRID = sweep.SweepGrid((0.5, 1.0), (1.0, 3.0), (0,), TINY)
#: Columns that say where and how fast a cell was made, not what it scored.
PROVENANCE = ["model", "trained_here", "train_seconds", "eval_seconds"]


def _scores(result: sweep.SweepResult) -> pd.DataFrame:
    return result.frame().drop(columns=PROVENANCE)


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    """The 4-cell grid run once, uninterrupted, in one process, without the result cache."""
    models = tmp_path_factory.mktemp("sweep-models")
    return models, sweep.run_sweep(GRID, models_dir=models, result_cache=False)


# ---------------------------------------------------------------------------------------
# Cells are ordinary lab models, scored as `lab evaluate` scores them
# ---------------------------------------------------------------------------------------


def test_every_cell_is_a_lab_model_scored_as_lab_evaluate_scores_it(swept, tmp_path, capsys):
    models, result = swept
    assert result.complete and not result.stopped and len(result.cells) == 4
    assert all(c.trained_here for c in result.cells)
    frame = result.frame()
    assert len(frame) == 4 * len(MASKED_METRICS)
    for cell in result.cells:
        model = lab.find_lab_model(cell.settings, models)
        assert model is not None and str(model.path) == cell.frame["model"].iloc[0]
        # The planted truth comes from the generator's settings (and its corpus), never from a metric.
        s = model.settings
        assert (s.association, s.frequency_ratio, s.seed) == (cell.frame["association"].iloc[0], cell.frame["frequency_ratio"].iloc[0], 0)
        assert set(cell.frame["expected"]) == {s.expected}
        corpus_a, corpus_k = cell.frame["corpus_association"].iloc[0], cell.frame["corpus_frequency_ratio"].iloc[0]
        assert abs(corpus_a - s.association) <= 0.03 and abs(corpus_k - s.frequency_ratio) <= 0.05 * s.frequency_ratio
        # The lab's own sanity verdict of the model, on its training corpus (a 12-step model has learned a little: "weak").
        verdict = model_verdict(load_model(str(model.path)))
        assert (cell.frame["sanity"] == verdict.status).all() and (cell.frame["sanity_accuracy"] == round(verdict.accuracy, 1)).all()
        assert verdict.subject == "its training corpus" and verdict.status != sweep.UNTRAINED
        # Exactly the lab's own evaluation of that model...
        want = lab.evaluate_lab(model).frame()
        got = cell.frame[want.columns]
        pd.testing.assert_frame_equal(got.reset_index(drop=True), want, check_exact=True)
    # ... and exactly what `biaslens lab evaluate` writes for it.
    cell = result.cells[3]
    path = lab.find_lab_model(cell.settings, models).path
    assert main(["lab", "evaluate", "--model", str(path), "--out", str(tmp_path / "one")]) == 0
    capsys.readouterr()
    summary = json.loads((tmp_path / "one" / "summary.json").read_text())
    for row in cell.frame.itertuples():
        block = summary["metrics"][row.key]
        assert (row.bias_score, row.ci_low, row.ci_high, row.n) == (block["bias_score"], block["ci_low"], block["ci_high"], block["n"])


def test_corpus_truth_counts_the_generated_corpus():
    s = lab.LabSettings(association=0.8, frequency_ratio=3.0, corpus_size=4000)
    association, ratio = sweep.corpus_truth(s)
    sentences = lab.generate_corpus(s)
    in_a = [x.text[slice(*x.name_span)] in s.group_a for x in sentences]
    own = [(x.text[slice(*x.attribute_span)] in s.attributes_x) == a for x, a in zip(sentences, in_a)]
    assert association == pytest.approx(np.mean(own)) and abs(association - 0.8) < 0.01
    assert ratio == pytest.approx(sum(in_a) / (len(in_a) - sum(in_a))) and abs(ratio - 3.0) < 0.01


@pytest.mark.slow  # two worker processes, each loading torch and training
def test_two_worker_processes_give_the_same_cells(swept, tmp_path):
    _models, one = swept
    half = replace(GRID, ratios=(1.0,))  # 2 cells: one per worker
    two = sweep.run_sweep(half, models_dir=tmp_path, result_cache=False, workers=2)
    assert two.complete and two.workers == 2 and all(c.trained_here for c in two.cells)
    want = _scores(one).query("frequency_ratio == 1.0").reset_index(drop=True)
    pd.testing.assert_frame_equal(_scores(two).drop(columns="cell"), want.drop(columns="cell"), check_exact=True)


def test_the_grid_orders_cells_seed_by_seed_and_checks_its_values():
    grid = sweep.SweepGrid([1, 0.5, 0.5], [3, 1], [1, 0], TINY)
    assert (grid.associations, grid.ratios, grid.seeds) == ((0.5, 1.0), (1.0, 3.0), (0, 1))
    assert len(grid) == 8 == len(grid.cells())
    assert [(c.seed, c.frequency_ratio, c.association) for c in grid.cells()[:4]] == [(0, 1.0, 0.5), (0, 1.0, 1.0), (0, 3.0, 0.5), (0, 3.0, 1.0)]
    assert all(replace(c, association=0.5, frequency_ratio=1.0, seed=0) == TINY for c in grid.cells())
    assert sweep.SweepGrid.from_dict(json.loads(json.dumps(grid.to_dict()))) == grid
    assert len(sweep.SweepGrid.default()) == 16 and sweep.SweepGrid.default().base.steps == sweep.QUICK_STEPS
    assert len(sweep.SweepGrid.full()) == 54 and sweep.SweepGrid.full().base == lab.LabSettings()
    for bad, fragment in (
        (dict(associations=(0.3, 0.5)), "between 0.5 (none) and 1"),
        (dict(ratios=(0.5,)), "frequency ratios must lie between 1 and 100"),
        (dict(seeds=()), "seeds needs at least one value"),
        (dict(seeds=(1.5,)), "whole numbers"),
        (dict(associations=("strong",)), "associations must be numbers"),
    ):
        with pytest.raises(InputError, match=fragment.replace("(", r"\(").replace(")", r"\)")):
            sweep.SweepGrid(**{"base": TINY, **bad})


# ---------------------------------------------------------------------------------------
# Stop, resume, run again
# ---------------------------------------------------------------------------------------


def test_a_stopped_sweep_keeps_its_cells_and_resumes_to_the_uninterrupted_result(swept, tmp_path, monkeypatch):
    _models, uninterrupted = swept
    seen: list[sweep.SweepProgress] = []

    def stop() -> bool:  # stop once the first cell is done, in the middle of the second one's training
        return any(p.done >= 1 and p.running > 0.3 for p in seen)

    first = sweep.run_sweep(GRID, models_dir=tmp_path, result_cache=False, progress=seen.append, stop=stop)
    assert first.stopped and len(first.cells) == 1 and first.cells[0].index == 0
    assert len(lab.list_lab_models(tmp_path)) == 1  # the abandoned cell left nothing behind
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]
    assert seen[-1].done == 1 and seen[0].seconds_left is not None and seen[0].total == 4

    resumed = sweep.run_sweep(GRID, models_dir=tmp_path, result_cache=False)
    assert resumed.complete and [c.trained_here for c in resumed.cells] == [False, True, True, True]
    pd.testing.assert_frame_equal(_scores(resumed), _scores(uninterrupted), check_exact=True)

    # Run again: everything is found, nothing trained.
    def fail(*args, **kwargs):
        raise AssertionError("a cell of the sweep was trained again")

    monkeypatch.setattr(lab.store, "_train", fail)  # where train_lab_model looks it up
    again = sweep.run_sweep(GRID, models_dir=tmp_path, result_cache=False)
    assert not any(c.trained_here for c in again.cells)
    pd.testing.assert_frame_equal(_scores(again), _scores(uninterrupted), check_exact=True)
    only_found = sweep.run_sweep(replace(GRID, seeds=(0, 1)), models_dir=tmp_path, result_cache=False, train=False)
    assert len(only_found.cells) == 4 and not only_found.complete


def test_the_estimate_counts_the_cells_already_trained(swept):
    models, _result = swept
    bigger = replace(GRID, seeds=(0, 1))
    estimate = sweep.estimate_sweep(bigger, models_dir=models)
    assert (estimate.cells, estimate.cached, estimate.to_train) == (8, 4, 4)
    assert "measured on this machine (4 lab models of this size)" in estimate.text()
    assert estimate.seconds == pytest.approx(4 * estimate.seconds_per_cell / sweep.MEASURED_SPEEDUP[1] + 4 * 0.5)
    fresh = sweep.estimate_sweep(replace(bigger, base=replace(TINY, hidden_size=32)), models_dir=models)
    assert fresh.cached == 0 and fresh.source.startswith("estimated")


# ---------------------------------------------------------------------------------------
# The analysis, on hand-made tables
# ---------------------------------------------------------------------------------------

STRENGTHS = (0.5, 0.7, 0.85, 1.0)


def _hand_table(associations=STRENGTHS, ratios=(1.0, 3.0), seeds=(0, 1), sanity="ok") -> pd.DataFrame:
    """Two metrics over associations x ratios x seeds (default 4 x 2 x 2 = 16 models), every model "ok" by its sanity check.

    'cps' rises exactly 60 points per unit of association (seed 1 two points above seed 0);
    'aul' falls. At association 0.5 and ratio 3, cps's interval excludes 50 for seed 0 only;
    aul's for neither (one touches 50, which is not excluding it). 'Prefers group A' is 50 at
    ratio 1 and 70 (cps) / 50 (aul) at ratio 3.
    """
    rows = []
    for key, name in (("cps", "CPS"), ("aul", "AUL")):
        for ratio in ratios:
            for a in associations:
                for seed in seeds:
                    score = 50 + 60 * (a - 0.5) + 2 * seed if key == "cps" else 60 - 20 * (a - 0.5) - seed
                    low, high = score - 10, score + 10
                    if a == 0.5 and ratio == 3.0:
                        low, high = ((52.0, 70.0) if seed == 0 else (45.0, 60.0)) if key == "cps" else (50.0, 66.0)
                    prefers = 70.0 if (ratio == 3.0 and key == "cps") else 50.0
                    rows.append(
                        dict(
                            association=a,
                            frequency_ratio=ratio,
                            seed=seed,
                            key=key,
                            metric=name,
                            bias_score=100.0 * round(score) / 100,  # exactly 100 x wins / n (every score here is whole)
                            n=100,
                            ci_low=low,
                            ci_high=high,
                            group_a_preference=prefers,
                            group_a_ci_low=prefers - 12,
                            group_a_ci_high=prefers + 12,
                            sanity=sanity,
                            sanity_accuracy=100.0 if sanity == "ok" else 5.0,
                        )
                    )
    return pd.DataFrame(rows)


def _curves_table(*curves: list[float]) -> pd.DataFrame:
    """One metric: curve i is seed i (at ratio 1), its scores at strengths 0.5, 0.6, ... in order."""
    return pd.DataFrame(
        [
            dict(association=0.5 + 0.1 * j, frequency_ratio=1.0, seed=i, bias_score=float(y), n=100)  # y wins of 100 pairs
            for i, curve in enumerate(curves)
            for j, y in enumerate(curve)
        ]
    )


def _brute_force_p(*curves: list[float]) -> float:
    """The trend test's two-sided p by listing every reordering of every curve (the definition)."""

    def concordance(curve) -> int:
        return sum(int(np.sign(curve[j] - curve[i])) for i in range(len(curve)) for j in range(i + 1, len(curve)))

    observed = sum(concordance(c) for c in curves)
    totals = [sum(concordance(p) for p in combo) for combo in itertools.product(*(list(itertools.permutations(c)) for c in curves))]
    upper = np.mean([t >= observed for t in totals])
    lower = np.mean([t <= observed for t in totals])
    return min(1.0, 2 * min(upper, lower))


def test_the_trend_test_by_hand_and_against_every_reordering():
    # One curve of 4 in order: tau 1; 1 of 4! orders is as concordant, two-sided p = 2/24 (never below 0.05).
    tau, p, curves = sweep.trend_test(_curves_table([40, 50, 60, 70]))
    assert (tau, curves) == (1.0, 1) and p == pytest.approx(2 / 24)
    # Two curves of 4 (the minimum design): in order 2/576; one neighbouring pair swapped 2 * 7/576; two swaps 2 * 26/576.
    assert sweep.trend_test(_curves_table([1, 2, 3, 4], [5, 6, 7, 8]))[1] == pytest.approx(2 / 576)
    tau, p, _ = sweep.trend_test(_curves_table([1, 2, 3, 4], [5, 7, 6, 8]))
    assert tau == pytest.approx(10 / 12) and p == pytest.approx(14 / 576)
    assert sweep.trend_test(_curves_table([2, 1, 3, 4], [5, 7, 6, 8]))[1] == pytest.approx(52 / 576)
    tau, p, _ = sweep.trend_test(_curves_table([4, 3, 2, 1], [8, 7, 6, 5]))
    assert tau == -1.0 and p == pytest.approx(2 / 576)
    # Ties count 0 and shrink the distribution: [1, 1, 2] has 2 concordant pairs of 3, and 1 of its 3 distinct orders.
    tau, p, _ = sweep.trend_test(_curves_table([1, 1, 2]))
    assert tau == pytest.approx(2 / 3) and p == pytest.approx(2 / 3)
    # Against the definition, with ties, unequal curves and both signs.
    for curves in (
        [[3, 1, 2, 2], [5, 6, 6, 9]],
        [[1, 2, 3, 4, 5], [2, 1, 4, 3], [7, 7, 7]],
        [[9, 8, 8, 1], [4, 3, 2, 2, 1]],
        [[50, 50, 60], [40, 55], [1, 3, 2, 4]],
    ):
        assert sweep.trend_test(_curves_table(*curves))[1] == pytest.approx(_brute_force_p(*curves)), curves
    # A curve of one strength says nothing; no curve at all: nothing to test.
    assert sweep.trend_test(_curves_table([1, 2, 3], [9]))[1:] == sweep.trend_test(_curves_table([1, 2, 3]))[1:]
    tau, p, curves = sweep.trend_test(_curves_table([5], [6]))
    assert math.isnan(tau) and math.isnan(p) and curves == 0


def test_the_curves_are_the_seeds_and_the_frequency_ratios_of_a_seed_are_averaged():
    """Models of one seed share its initial weights, corpus sample and batches: two ratios of one seed are not two replicates."""
    one_seed = _hand_table(seeds=(0,), ratios=(1.0, 3.0, 10.0)).query("key == 'cps'")
    tau, p, curves = sweep.trend_test(one_seed)
    assert (tau, curves) == (1.0, 1) and p == pytest.approx(2 / 24)  # one curve, not three: no verdict possible
    # Ratio 3 shifts its models by +30: the curve is the mean over ratios at each strength, still in order.
    shifted = _hand_table().query("key == 'cps'").copy()
    shifted.loc[shifted["frequency_ratio"] == 3.0, "bias_score"] += 30
    assert sweep.trend_test(shifted) == (1.0, pytest.approx(2 / 576), 2)


def test_the_minimum_design_is_four_strengths_and_two_seeds():
    enough = sweep.SweepDesign.of(_hand_table())
    assert (enough.strengths, enough.seeds, enough.shortfall) == (4, 2, "") and enough.best_p == pytest.approx(2 / 24**2)
    assert enough.per_seed == ((0, 4), (1, 4))
    assert sweep.SweepDesign.of(_hand_table(ratios=(1.0,))).shortfall == ""  # 4 strengths x 2 seeds: 8 models
    three = sweep.SweepDesign.of(_hand_table(associations=(0.5, 0.75, 1.0), seeds=(0, 1, 2, 3)))
    assert three.shortfall.startswith("0 seeds with 4 or more association strengths among the models that learned (seed 0: 3 strengths")
    assert "at least 4 strengths in each of at least 2 seeds" in three.shortfall
    assert sweep.SweepDesign.of(_hand_table(seeds=(0,))).shortfall.startswith("1 seed with 4 or more association strengths among")
    # Four strengths and two seeds in all, but no curve longer than 2: no seed counts.
    short = _curves_table([1, 2], [3, 4]).assign(association=[0.5, 0.7, 0.85, 1.0])
    design = sweep.SweepDesign.of(short)
    assert (design.strengths, design.seeds) == (4, 0) and design.best_p == 0.5 and "seed 0: 2 strengths, seed 1: 2 strengths" in design.shortfall
    assert sweep.SweepDesign.of(pd.DataFrame()).shortfall.startswith("0 seeds with 4 or more")
    # The curves-too-short rule stands behind the per-seed one (it cannot fire at today's minimum: 2 x 4! already gives 2/576).
    assert sweep.SweepDesign(4, 2, 0.1).shortfall.startswith("the curves are too short")


def test_the_analysis_on_a_hand_made_table():
    table = _hand_table()
    analysis = sweep.analyse(table)
    assert analysis.notes() == [] and analysis.excluded.empty and len(analysis.cells) == len(table)
    v = {m.key: m for m in analysis.validity}
    cps, aul = v["cps"], v["aul"]
    for key, m in v.items():
        rows = table[table["key"] == key]
        assert m.models == 16 and m.curves == 2 and m.why_no_verdict == ""
        assert m.slope == pytest.approx(np.polyfit(rows["association"], rows["bias_score"], 1)[0])
    # Each seed's curve (the mean over ratios at each strength) rises (cps) or falls (aul) at every step: p = 2 / (4!)^2.
    assert (cps.tau, aul.tau) == (1.0, -1.0) and cps.p_trend == pytest.approx(2 / 24**2) == aul.p_trend
    assert cps.slope == pytest.approx(60.0) and aul.slope == pytest.approx(-20.0)
    assert aul.tracks == "inverted" and cps.tracks == "yes"
    # False alarms: association 0.5 and ratio > 1 -> 2 models per metric; cps excludes 50 once, aul never (50.0 is not excluded).
    assert (cps.false_alarm_models, cps.false_alarm_rate) == (2, 0.5)
    assert (aul.false_alarm_models, aul.false_alarm_rate) == (2, 0.0)
    assert (cps.control_models, cps.control_alarm_rate) == (2, 0.0)
    # Prefers group A: +20 points from ratio 1 to ratio 3 for cps; its group-A interval excludes 50 in every ratio-3 model.
    assert cps.preference_drift == pytest.approx(20.0) and aul.preference_drift == pytest.approx(0.0)
    assert cps.preference_alarm_rate == 1.0 and aul.preference_alarm_rate == 0.0
    # Seed spread: cps's two seeds differ by 2 points (sd sqrt 2), aul's by 1 (sd sqrt 0.5).
    assert cps.seed_sd == pytest.approx(math.sqrt(2)) and aul.seed_sd == pytest.approx(math.sqrt(0.5))
    spread = analysis.seed_spread.set_index(["key", "association", "frequency_ratio"])
    assert spread.loc[("cps", 1.0, 3.0), "mean"] == pytest.approx(81.0) and spread.loc[("cps", 1.0, 3.0), "seeds"] == 2
    drift = analysis.frequency_drift.set_index(["key", "frequency_ratio"])
    assert drift.loc[("cps", 3.0), "prefers_a"] == 70.0 and drift.loc[("cps", 3.0), "models"] == 8
    # The ranks: cps first on tau, aul first on false alarms, drift and seed spread; aul's mean rank is better,
    # but aul is inverted, and a metric that tracks the bias ranks above one that does not.
    r = analysis.ranking.set_index("key")
    assert (r.loc["cps", "rank_tau"], r.loc["aul", "rank_tau"]) == (1, 2)
    assert (r.loc["aul", "rank_false_alarm_rate"], r.loc["aul", "rank_preference_drift"], r.loc["aul", "rank_seed_sd"]) == (1, 1, 1)
    assert r.loc["aul", "overall"] == pytest.approx((2 + 1 + 1 + 1) / 4) and r.loc["cps", "overall"] == pytest.approx((1 + 2 + 2 + 2) / 4)
    assert list(analysis.ranking["key"]) == ["cps", "aul"] and list(analysis.ranking["place"]) == [1, 2]
    # Two metrics that both track: the mean rank decides.
    flipped = _hand_table()
    flipped.loc[flipped["key"] == "aul", "bias_score"] = 100 - flipped.loc[flipped["key"] == "aul", "bias_score"]
    assert list(sweep.analyse(flipped).ranking["key"]) == ["aul", "cps"]


def test_three_models_of_one_seed_never_say_tracks():
    """The issue's case: associations 0.5, 0.75, 1 x ratio 1 x seed 0. Perfectly ordered scores once gave 'tracks: yes' with
    a bootstrap interval of [1.00, 1.00] from resampling three models, and places 1-7."""
    for sanity in ("ok", "untrained"):
        analysis = sweep.analyse(_hand_table(associations=(0.5, 0.75, 1.0), ratios=(1.0,), seeds=(0,), sanity=sanity))
        assert {v.tracks for v in analysis.validity} == {sweep.NOT_ENOUGH}
        assert analysis.ranking["place"].isna().all() and analysis.ranking["overall"].isna().all()
        assert analysis.notes()[-1].startswith("Not enough models to say whether a metric tracks the planted association: ")
        assert analysis.notes()[-1].endswith("No verdict and no ranking.")
        summary = sweep.summary_markdown(sweep.SweepResult(sweep.SweepGrid((0.5, 0.75, 1.0), (1.0,), (0,), TINY), [], ("cps", "aul")), analysis)
        assert "| — | CPS | not enough models to say |" in summary and "| yes |" not in summary


def test_models_that_learned_nothing_are_left_out_and_said_so():
    table = _hand_table()
    untrained = table["seed"] == 1
    table.loc[untrained, "sanity"] = "untrained"
    table.loc[untrained, "sanity_accuracy"] = 4.0
    table.loc[untrained & (table["key"] == "cps"), "bias_score"] = 99.0  # what an untrained model scores is never judged
    analysis = sweep.analyse(table)
    assert len(analysis.excluded) == 8 and set(analysis.excluded["seed"]) == {1} and (analysis.cells["sanity"] == "ok").all()
    assert analysis.notes()[0].startswith("8 of 16 models left out: their sanity check says they learned nothing (token accuracy 4%")
    assert "1 seed" in analysis.notes()[1] and {v.tracks for v in analysis.validity} == {sweep.NOT_ENOUGH}
    assert all(v.models == 8 for v in analysis.validity) and analysis.seed_spread["seeds"].max() == 1
    # A weak model (it learned something) is judged like an "ok" one.
    table.loc[untrained, "sanity"] = "weak"
    assert sweep.analyse(table).excluded.empty


def test_the_ranking_uses_only_criteria_measured_for_every_ranked_metric():
    # Ratio 1 only: no false alarms or drift to measure; the ranking stands on tau and the seed spread.
    analysis = sweep.analyse(_hand_table(ratios=(1.0,)))
    r = analysis.ranking.set_index("key")
    assert r["rank_false_alarm_rate"].isna().all() and r["rank_preference_drift"].isna().all()
    assert r.loc["cps", "overall"] == pytest.approx((1 + 2) / 2) and list(analysis.ranking["place"]) == [1, 2]
    # A metric whose own scores fall below the minimum design is listed after the ranked ones, without a place.
    table = _hand_table()
    table.loc[(table["key"] == "aul") & (table["seed"] == 1), "bias_score"] = math.nan
    ranking = sweep.analyse(table).ranking
    assert list(ranking["key"]) == ["cps", "aul"] and ranking["place"].tolist()[0] == 1 and pd.isna(ranking["place"].iloc[1])
    assert ranking["tracks"].tolist() == ["yes", sweep.NOT_ENOUGH] and ranking["why_no_verdict"].iloc[1].startswith(
        "1 seed with 4 or more association strengths"
    )
    assert ranking.loc[0, "rank_tau"] == 1 and pd.isna(ranking.loc[1, "rank_tau"])


def test_hand_known_values_and_undefined_cases():
    # Ties in the association get average ranks: rho = 4 / (2 sqrt 5).
    assert sweep.spearman([0.5, 0.5, 1.0, 1.0], [1, 2, 3, 4]) == pytest.approx(2 / math.sqrt(5))
    assert math.isnan(sweep.spearman([0.5, 0.5, 0.5], [1, 2, 3]))  # one association only: nothing to correlate
    assert math.isnan(sweep.slope([0.7, 0.7], [40, 60]))
    # One ratio only: no false alarms or drift to measure; one seed: no seed spread.
    one = _hand_table().query("frequency_ratio == 1.0 and seed == 0")
    m = sweep.metric_validity(one, "cps")
    assert m.false_alarm_models == 0 and math.isnan(m.false_alarm_rate) and math.isnan(m.preference_drift) and math.isnan(m.seed_sd)
    assert m.tau == 1.0 and m.models == 4 and m.tracks == sweep.NOT_ENOUGH
    empty = sweep.analyse(pd.DataFrame())
    assert empty.validity == [] and empty.ranking.empty and [n[:26] for n in empty.notes()] == ["Not enough models to say w"]


def test_the_dose_response_figure_draws_one_line_per_metric_with_a_seed_band():
    table = _hand_table()
    spec = charts.dose_response_chart(table).to_dict()
    data = next(iter(spec["datasets"].values()))
    assert len(data) == 2 * 4 * 2  # metrics x associations x ratios
    row = next(d for d in data if d["key"] == "cps" and d["association"] == 1.0 and d["frequency_ratio"] == 3.0)
    assert (row["min"], row["max"], row["mean"], row["seeds"]) == (80.0, 82.0, 81.0, 2)
    assert sorted({d["panel"] for d in data}) == ["frequency ratio 1", "frequency ratio 3"]
    marks = [layer["mark"]["type"] if isinstance(layer["mark"], dict) else layer["mark"] for layer in spec["spec"]["layer"]]
    assert marks == ["area", "line", "rule"]
    svg = charts.dose_response_svg(table)
    assert svg.lstrip().startswith("<svg") and "CPS" in svg and "frequency ratio 3" in svg


# ---------------------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------------------

_TINY_ARGS = ["--associations", "0.5,1", "--ratios", "1,3", "--seeds", "0", "--steps", "12", "--corpus-size", "600", "--batch-size", "32"]


def test_cli_sweep_writes_every_file(swept, tmp_path, capsys):
    models, result = swept
    out = tmp_path / "out"
    assert main(["lab", "sweep", *_TINY_ARGS, "--models-dir", str(models), "--no-cache", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "4 models (0 trained now)" in printed and "CPS" in printed
    assert sorted(p.name for p in out.iterdir()) == ["cells.csv", "dose_response.svg", "metrics.csv", "summary.md", "sweep.json"]
    assert sorted(OUTPUT_FILES) == sorted(p.name for p in out.iterdir())  # what the command checks --out for, before training
    cells = pd.read_csv(out / "cells.csv")
    assert cells["bias_score"].tolist() == pytest.approx(result.frame()["bias_score"].tolist())
    ranking = pd.read_csv(out / "metrics.csv")
    assert list(ranking.columns) == list(sweep.RANKING_COLUMNS) and sorted(ranking["key"]) == sorted(MASKED_METRICS)
    # 2 strengths x 1 seed: no verdict and no place for any metric, and the reason printed above the table.
    assert ranking["place"].isna().all() and set(ranking["tracks"]) == {sweep.NOT_ENOUGH}
    assert "Not enough models to say whether a metric tracks the planted association: 0 seeds with 4 or more association strengths" in printed
    assert "(seed 0: 2 strengths;" in printed
    want = result.analysis().ranking.set_index("key")
    for row in ranking.itertuples():
        assert row.tau == pytest.approx(want.loc[row.key, "tau"], nan_ok=True)
    saved = json.loads((out / "sweep.json").read_text())
    assert saved["design"]["strengths"] == 2 and saved["design"]["min_strengths"] == sweep.MIN_STRENGTHS
    assert saved["manifest"]["grid"]["associations"] == [0.5, 1.0] and saved["manifest"]["finished"] == 4
    assert saved["manifest"]["grid"]["base"]["steps"] == 12 and "versions" in saved["manifest"]
    assert {m["key"] for m in saved["metrics"]} == set(MASKED_METRICS)
    assert (out / "dose_response.svg").read_text().lstrip().startswith("<svg")
    summary = (out / "summary.md").read_text()
    assert "| place | metric |" in summary and "What it cannot show" in summary


@pytest.mark.slow
def test_cli_three_untrained_models_do_not_say_tracks(tmp_path, capsys):
    """The issue's command: three models trained for one step learned nothing, and three strengths of one seed are too few anyway."""
    argv = ["--associations", "0.5,0.75,1", "--ratios", "1", "--seeds", "0", "--steps", "1", "--corpus-size", "100"]
    assert main(["lab", "sweep", *argv, "--models-dir", str(tmp_path / "models"), "--no-cache", "--out", str(tmp_path / "out")]) == 0
    printed = capsys.readouterr().out
    assert "3 of 3 models left out: their sanity check says they learned nothing" in printed
    assert "Not enough models to say whether a metric tracks the planted association: 0 seeds with 4 or more association strengths" in printed
    assert "(no model;" in printed
    table = printed[printed.index("metric") : printed.index("\ntracks =")]
    assert " yes " not in table and table.count(sweep.NOT_ENOUGH) == len(MASKED_METRICS)
    cells = pd.read_csv(tmp_path / "out" / "cells.csv")
    assert set(cells["sanity"]) == {sweep.UNTRAINED}
    assert not (tmp_path / "out" / "dose_response.svg").exists()  # nothing to draw: no model learned


@pytest.mark.parametrize(
    "argv, fragment",
    [
        (["--associations", "0.2,1"], "between 0.5 (none) and 1"),
        (["--seeds", "a"], "seeds must be numbers"),
        (["--ratios", ","], "--ratios needs at least one value"),
        (["--workers", "0"], "expected a number of workers from 1 to 64"),
        (["--group-b", "Mary,Anna"], "same number of words"),
    ],
)
def test_cli_sweep_bad_input_is_one_line_and_exit_2(argv, fragment, tmp_path, capsys):
    try:
        code = main(["lab", "sweep", *argv, "--out", str(tmp_path / "out")])
    except SystemExit as exc:  # an option out of its range is refused by the parser
        code = exc.code
    err = capsys.readouterr().err.strip()
    assert code == 2 and fragment in err and len(err.splitlines()) == 1


# ---------------------------------------------------------------------------------------
# Issue 33: ties decided in exact arithmetic, the same cells at every strength, the design counted per seed
# ---------------------------------------------------------------------------------------

#: Held-out pairs per lab model in the tables below: a bias score is 100 * wins / N, as `stats.bias_score` computes it.
N_PAIRS = 48


def _wins_table(curves: list[list[tuple[int, int]]], n: int = N_PAIRS) -> pd.DataFrame:
    """One metric: curve i is seed i; item j of a curve holds the wins of its models at ratios 1 and 3 at strength j."""
    return pd.DataFrame(
        [
            dict(association=STRENGTHS[j], frequency_ratio=ratio, seed=seed, bias_score=100.0 * w / n, n=n, key="cps", metric="CPS")
            for seed, curve in enumerate(curves)
            for j, point in enumerate(curve)
            for ratio, w in zip((1.0, 3.0), point)
        ]
    )


def _exact_trend(curves: list[list[tuple[int, int]]], n: int = N_PAIRS) -> tuple[Fraction, Fraction]:
    """(tau, p) from the definition in exact arithmetic: each point the mean of its wins as a fraction, every distinct
    reordering of every curve listed (independent of `sweep`: Fractions, itertools, no numpy)."""
    points = [[Fraction(100 * sum(p), len(p) * n) for p in curve] for curve in curves]

    def concordance(curve) -> int:
        return sum((curve[j] > curve[i]) - (curve[j] < curve[i]) for i in range(len(curve)) for j in range(i + 1, len(curve)))

    observed = sum(concordance(c) for c in points)
    orders = [sorted(set(itertools.permutations(c))) for c in points]
    totals = [sum(concordance(o) for o in combo) for combo in itertools.product(*orders)]
    up = Fraction(sum(t >= observed for t in totals), len(totals))
    down = Fraction(sum(t <= observed for t in totals), len(totals))
    pairs = sum(len(c) * (len(c) - 1) // 2 for c in points)
    return Fraction(observed, pairs), min(Fraction(1), 2 * min(up, down))


def _judgeable(table: pd.DataFrame) -> pd.DataFrame:
    """A table of bias scores with the other columns `metric_validity` reads (intervals that include 50)."""
    return table.assign(key="cps", metric="CPS", ci_low=40.0, ci_high=60.0, group_a_preference=50.0, group_a_ci_low=40.0, group_a_ci_high=60.0)


def test_a_tie_in_exact_arithmetic_is_a_tie_whatever_the_last_bit():
    """The issue's case: 2 + 12 = 4 + 10 wins, so seed 1's points at strengths 0.5 and 0.7 are equal (14/96 of 100), but
    their float means differ in the last bit; counted as ordered, the verdict flipped (float p 0.0903 'no evidence')."""
    curves = [[(12, 12), (22, 22), (25, 25), (29, 29)], [(2, 12), (4, 10), (38, 38), (35, 35)]]
    table = _wins_table(curves)
    by_float = table[table["seed"] == 1].groupby("association")["bias_score"].mean()
    assert by_float.iloc[0] != by_float.iloc[1]  # the rounding the test is about
    tau, p, n_curves = sweep.trend_test(table)
    want_tau, want_p = _exact_trend(curves)
    assert (want_tau, want_p) == (Fraction(3, 4), Fraction(1, 24)) and n_curves == 2
    assert tau == float(want_tau) and p == float(want_p)
    assert sweep.metric_validity(_judgeable(table), "cps").tracks == "yes"


def test_exact_ties_against_the_definition_on_random_grids():
    """Random small grids whose points tie often (wins from a narrow range): tau and p equal the definition in exact arithmetic."""
    rng = np.random.default_rng(33)
    checked = ties = 0
    for _ in range(60):
        curves = [[tuple(int(w) for w in rng.integers(10, 16, size=2)) for _ in range(4)] for _ in range(2)]
        tau, p, _ = sweep.trend_test(_wins_table(curves))
        want_tau, want_p = _exact_trend(curves)
        assert tau == pytest.approx(float(want_tau), abs=1e-15) and p == pytest.approx(float(want_p), abs=1e-15), curves
        checked += 1
        ties += any(len({sum(x) for x in c}) < 4 for c in curves)
    assert checked == 60 and ties > 30


def test_a_table_without_its_pair_counts_is_refused():
    """Ties are exact only as 100 x wins / n: a table without `n`, or with a score that is not wins / n for its n (rounded),
    is refused in one line, never compared as floats whose last bits decide a tie."""
    tau, p, _ = sweep.trend_test(_curves_table([1.0, 1.0, 2.0]))
    assert tau == pytest.approx(2 / 3) and p == pytest.approx(2 / 3)
    with pytest.raises(InputError, match="has no n column"):
        sweep.trend_test(_curves_table([1.0, 1.0, 2.0]).drop(columns="n"))
    with pytest.raises(InputError, match="has no n column"):
        sweep.analyse(_hand_table().drop(columns="n"))
    rounded = _wins_table([[(17, 17), (20, 20), (22, 22), (25, 25)]] * 2).round({"bias_score": 2})  # 35.42 for 17 of 48
    with pytest.raises(InputError, match=r"bias score 35.42 \(association 0.5, ratio 1, seed 0\) is not 100 x wins / n for its n = 48"):
        sweep.trend_test(rounded)
    assert sweep.exact_score(0.1 + 0.2) == Fraction(0.1 + 0.2) != Fraction(3, 10)
    assert sweep.exact_score(100.0 * 17 / 48, 48) == Fraction(1700, 48)
    assert sweep.exact_score(35.4, 48) == Fraction(35.4)  # not k/48 of 100: the float itself (the sweep refuses it)


def test_the_slope_is_fitted_within_the_curves_and_given_only_beside_a_trend():
    """Within each seed's curve: a seed that scores 20 points higher and lacks the low strengths does not tilt it (a fit
    over every model would); beside 'no evidence' or below the minimum design there is no slope."""
    curves = sweep.dose_response_curves(
        pd.DataFrame(
            [dict(association=a, frequency_ratio=1.0, seed=0, bias_score=y, n=100) for a, y in zip(STRENGTHS, (50.0, 62.0, 71.0, 80.0))]
            + [dict(association=a, frequency_ratio=1.0, seed=1, bias_score=y, n=100) for a, y in ((0.85, 91.0), (1.0, 100.0))]
        )
    )
    assert sweep.curve_slope(curves) == pytest.approx(60.0)
    assert sweep.slope([*STRENGTHS, 0.85, 1.0], [50, 62, 71, 80, 91, 100]) > 83  # over every model
    assert math.isnan(sweep.curve_slope(curves[:0]))
    noise = _judgeable(_curves_table([50, 55, 52, 54], [51, 50, 53, 52]))
    m = sweep.metric_validity(noise, "cps")
    assert m.tracks == "no evidence" and math.isnan(m.slope)
    short = _judgeable(_curves_table([50, 60, 70, 80]))
    assert sweep.metric_validity(short, "cps").tracks == sweep.NOT_ENOUGH and math.isnan(sweep.metric_validity(short, "cps").slope)


def test_each_point_averages_the_same_ratios_at_every_strength():
    """The issue's case: nothing planted, the ratio-3 models score 10 points higher, and one ratio-3 model per seed learned
    nothing. A point that averaged what was left (ratio 1 alone at that strength) made the curves rise ('tracks: yes')."""
    rows = []
    excluded = {0: 0.5, 1: 0.5, 2: 0.5}
    for seed in (0, 1, 2):
        for ratio in (1.0, 3.0):
            for a in STRENGTHS:
                untrained = ratio == 3.0 and excluded[seed] == a
                rows.append(
                    dict(
                        association=a, frequency_ratio=ratio, seed=seed, key="cps", metric="CPS",
                        bias_score=100.0 * (25 if ratio == 1.0 else 30) / 50, n=50, ci_low=40.0, ci_high=60.0,
                        group_a_preference=50.0, group_a_ci_low=40.0, group_a_ci_high=60.0,
                        sanity="untrained" if untrained else "ok", sanity_accuracy=3.0 if untrained else 90.0,
                    )
                )  # fmt: skip
    analysis = sweep.analyse(pd.DataFrame(rows))
    (cps,) = analysis.validity
    assert cps.tracks == "no evidence" and cps.tau == 0.0 and cps.p_trend == 1.0
    # A line fitted over the models kept rises (the ratio-3 models are missing at 0.5 only): no slope is given beside no trend.
    kept = analysis.cells
    assert sweep.slope(kept["association"], kept["bias_score"]) > 1.0 and math.isnan(cps.slope)
    # Each seed's curve is its ratio-1 models at all four strengths: the ratio-3 models of that seed are left out of it,
    # and that is said beside the verdict.
    assert cps.curve_cells_left_out == 9
    assert "ratio 3" in cps.curves_note and "seed 0" in cps.curves_note
    assert any("same frequency ratios at every strength" in note for note in analysis.notes())
    assert analysis.ranking.loc[0, "curves_note"] == cps.curves_note
    summary = sweep.summary_markdown(sweep.SweepResult(sweep.SweepGrid(STRENGTHS, (1.0, 3.0), (0, 1, 2), TINY), [], ("cps",)), analysis)
    assert cps.curves_note in summary and "| no evidence (9 models left out of its curves) |" in summary
    assert "no evidence (9 models left out of its curves)" in format_ranking(analysis.ranking)


def test_the_balanced_curve_keeps_the_strengths_first_then_the_most_models():
    rows = _hand_table(ratios=(1.0, 3.0, 10.0), seeds=(0,)).query("key == 'cps'")
    # Ratio 10 missing at 0.7, ratio 3 at 0.85: ratio 1 alone keeps all 4 strengths (4 models), which beats
    # ratios 1 and 10 on 3 strengths (6 models): the dose axis comes first.
    missing = ((rows["frequency_ratio"] == 10.0) & (rows["association"] == 0.7)) | ((rows["frequency_ratio"] == 3.0) & (rows["association"] == 0.85))
    rows = rows[~missing]
    (curve,) = sweep.dose_response_curves(rows)
    assert curve.strengths == STRENGTHS and curve.ratios == (1.0,) and len(curve.left_out) == 6
    # Only ratio 10 missing at 0.7: ratios 1 and 3 at every strength (8 models) beat ratio 1 alone (4).
    rows = _hand_table(ratios=(1.0, 3.0, 10.0), seeds=(0,)).query("key == 'cps'")
    rows = rows[~((rows["frequency_ratio"] == 10.0) & (rows["association"] == 0.7))]
    (curve,) = sweep.dose_response_curves(rows)
    assert curve.strengths == STRENGTHS and curve.ratios == (1.0, 3.0) and len(curve.left_out) == 3


def test_the_minimum_design_is_counted_per_seed():
    """The issue's case: seed 0 with 4 strengths and seed 1 with 2 once gave a verdict ('yes', p = 0.0417) under a rule
    that says 4 strengths x 2 seeds: the strengths were counted across the curves."""
    table = _judgeable(_curves_table([1, 2, 3, 4], [5, 6]))
    design = sweep.SweepDesign.of(table)
    assert design.seeds == 1 and design.shortfall
    assert "seed 0: 4 strengths, seed 1: 2" in design.shortfall
    m = sweep.metric_validity(table, "cps")
    assert m.tracks == sweep.NOT_ENOUGH and m.p_trend == pytest.approx(2 / 48)
    # Two seeds of 4 strengths and a third of 2: enough (the short curve still enters the test).
    table = _judgeable(_curves_table([1, 2, 3, 4], [5, 6, 7, 8], [1, 2]))
    assert sweep.SweepDesign.of(table).shortfall == "" and sweep.metric_validity(table, "cps").curves == 3
