"""The dataset explorer with AppTest: runs, resumption, breakdowns, the pairs table, exports."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.runtime.scriptrunner_utils.exceptions import RerunException
from streamlit.runtime.scriptrunner_utils.script_requests import RerunData

import biaslens.engine.evaluation
import biaslens.engine.pairs
import ui.progress
import ui.runs
from biaslens.analyses import explore
from tests.support.app import interactive_tables, no_exceptions, run_app, shown_columns, static_tables, texts
from biaslens.engine.cache import ResultCache
from biaslens.data.datasets import load_dataset
from biaslens.engine.evaluation import evaluate
from tests.support import FIXTURE_DATA


S = "explorer."
N = 12  # pairs sampled (the fixture CrowS-Pairs has 16)
LINK = {"sample": str(N), "metrics": ["aul", "cps"], "metric": "cps"}


def expected(lm, cache_dir, **options):
    dataset = load_dataset("crows-pairs", data_dir=FIXTURE_DATA)
    return evaluate(lm, dataset, ["aul", "cps"], sample=N, cache=ResultCache(cache_dir / "results.sqlite"), **options)


def test_a_run_shows_the_breakdown(app_env, tiny_bert, tmp_path):
    at = run_app("explorer", LINK)
    no_exceptions(at)
    assert f"Not scored yet: {N} pairs × 2 metrics" in texts(at.info)
    assert not at.metric
    at.button(key=S + "run").click().run()
    no_exceptions(at)
    want = expected(tiny_bert, tmp_path / "check").summary["metrics"]
    metrics = {m.label: m.value for m in at.metric}
    assert metrics == {"AUL bias score": f"{want['aul']['bias_score']:.1f}", "CPS bias score": f"{want['cps']['bias_score']:.1f}"}
    assert f"N {want['cps']['n']}" in texts(at.caption) and "token accuracy" in texts(at.caption)
    assert not at.get("progress")  # the bar is gone once the run is finished
    assert "Not scored yet" not in texts(at.info)  # and so is the notice
    summaries = static_tables(at)  # static: every column in sight on a projector or at 1024 px
    scores = next(t for t in summaries if "Metric" in t.columns and "Bias score" in t.columns and "Group" not in t.columns)
    assert list(scores["Metric"]) == ["AUL", "CPS"] and list(scores["N"]) == [N, N]
    by_type = next(t for t in summaries if "Bias type" in t.columns and "95% CI low" in t.columns)
    assert "Metric" not in by_type.columns  # the metric in focus, named in the chart
    assert by_type["N"].sum() == N
    groups = next(t for t in summaries if "Group" in t.columns)
    assert sorted(g.split()[0] for g in groups["Group"].unique()) == ["Adv", "Dis"] and set(groups["Metric"]) == {"AUL", "CPS"}
    text = "The pair: [stereotypical → anti-stereotypical]"
    pairs = next(t for t in interactive_tables(at) if text in t.columns)
    # The results first, then the pair in one column: all of it in sight at 1024 px (issue 30: the second sentence was off-screen).
    assert len(pairs) == N and list(pairs.columns) == ["Pair", "CPS margin", "CPS prefers", text]
    frame = next(d for d in at.dataframe if "sent_stereo" in d.value.columns).value
    assert pairs[text].tolist() == [explore.pair_text(a, b) for a, b in zip(frame["sent_stereo"], frame["sent_anti"])]
    assert all("[" in t and " → " in t for t in pairs[text])
    assert set(pairs["CPS prefers"]) <= {"stereotypical", "anti-stereotypical", "tie", "undecidable"}
    pinned = shown_columns(next(d for d in at.dataframe if "sent_stereo" in d.value.columns))[1]
    assert pinned == {"Pair", "CPS margin", "CPS prefers"}  # in sight however far the sentences scroll (issue 21, journey 8)
    assert not {"bias_type", "direction", "sent_stereo", "cps_margin"} & set(pairs.columns)  # no internal names
    assert not at.get("download_button")  # the Export tab is drawn once opened: its figures are drawn as SVG there
    at.session_state[S + "tab"] = "Export"
    at.run()
    no_exceptions(at)
    assert [b.label for b in at.get("download_button")][:3] == ["Pairs (CSV)", "Pairs (JSON)", "Summary + manifest (JSON)"]
    assert len(at.get("download_button")) == 6  # + three figures as SVG, drawn (an export that fails says so in the page)
    assert at.query_params["sample"] == str(N) and at.query_params["metrics"] == ["aul", "cps"]


def test_a_finished_run_reopens_from_the_cache(app_env):
    first = run_app("explorer", LINK)
    first.button(key=S + "run").click().run()
    scores = [m.value for m in first.metric]
    again = run_app("explorer", LINK)  # a new session, e.g. a shared link
    no_exceptions(again)
    assert [m.value for m in again.metric] == scores
    assert not again.info


def test_a_corrupted_cache_file_is_reported_once(app_env):
    cache_dir = Path(app_env["BIASLENS_CACHE_DIR"])
    cache_dir.mkdir(parents=True, exist_ok=True)
    (cache_dir / "results.sqlite").write_bytes(b"half-copied garbage " * 500)
    at = run_app("explorer", LINK)
    at.button(key=S + "run").click().run()
    no_exceptions(at)
    assert len(at.metric) == 2 and "was corrupted" in texts(at.warning)  # the run goes on with a fresh cache and says why
    again = run_app("explorer", LINK)
    assert len(again.metric) == 2 and "was corrupted" not in texts(again.warning)


def _count_scored(monkeypatch) -> list[int]:
    """The number of pairs of each computation of a run (the cached ones are not computed)."""
    scored: list[int] = []
    real_score = biaslens.engine.pairs.score_encoded_pairs  # where a run's compute step scores (pairs.metric_records)
    monkeypatch.setattr(
        biaslens.engine.pairs, "score_encoded_pairs", lambda lm, pairs, *a, **k: scored.append(len(pairs)) or real_score(lm, pairs, *a, **k)
    )
    return scored


def test_an_interrupted_run_resumes_from_the_cache(app_env, monkeypatch):
    """A click elsewhere during a run makes Streamlit rerun the page, which interrupts the run: the page resumes it by
    itself, from the cache (only the chunk that was interrupted is scored again)."""
    monkeypatch.setattr(ui.runs, "CHUNK_PAIRS", 4)
    real_call = ui.progress.ProgressBar.__call__
    interrupted = []

    def user_clicks_elsewhere(self, done, total):
        real_call(self, done, total)
        if done > 4 and not interrupted:  # inside the second chunk: the first one is cached
            interrupted.append(done)
            raise RerunException(RerunData())  # what Streamlit raises in the script when the user clicks elsewhere

    monkeypatch.setattr(ui.progress.ProgressBar, "__call__", user_clicks_elsewhere)
    scored = _count_scored(monkeypatch)
    at = run_app("explorer", LINK)
    at.button(key=S + "run").click().run()  # interrupted in its second chunk
    assert interrupted and not at.metric
    at.run()  # the page again (AppTest's rerun opened the home page): the pending run resumes by itself
    no_exceptions(at)
    assert sum(scored) == N + 4  # every pair once, and the interrupted chunk's 4 pairs again
    assert len(at.metric) == 2


def test_a_stopped_run_says_what_it_kept_and_resumes_there(app_env, tiny_bert, monkeypatch):
    """Issue 21, journey 5: a run stopped after 5 of its pairs says so, offers Resume, and its progress starts at 5."""
    dataset = load_dataset("crows-pairs", data_dir=FIXTURE_DATA)
    cache = ResultCache(Path(app_env["BIASLENS_CACHE_DIR"]) / "results.sqlite")
    sampled = biaslens.engine.evaluation.select_pairs(list(dataset.pairs), sample=N, seed=0)
    evaluate(tiny_bert, sampled[:5], ["aul", "cps"], cache=cache)  # what the run had finished when Stop was pressed
    at = run_app("explorer", LINK)
    no_exceptions(at)
    assert f"Not finished: 5 of {N} pairs kept in the result cache (2 metrics" in texts(at.info)
    assert "Not scored yet" not in texts(at.info) and at.button(key=S + "run").label == "Resume"
    shown = []
    real_call = ui.progress.ProgressBar.__call__
    monkeypatch.setattr(ui.progress.ProgressBar, "__call__", lambda self, done, total: shown.append(done) or real_call(self, done, total))
    scored = _count_scored(monkeypatch)
    at.button(key=S + "run").click().run()
    no_exceptions(at)
    assert sum(scored) == N - 5 and min(shown) >= 5  # the kept pairs read back, and counted from the first progress
    assert len(at.metric) == 2 and not at.info


def test_selecting_a_row_opens_the_pair_in_the_inspector(app_env):
    at = run_app("explorer", LINK)
    at.button(key=S + "run").click().run()
    table = next(d for d in at.dataframe if "sent_stereo" in d.value.columns)
    pair_id = int(table.value.iloc[3]["pair_id"])
    at.session_state[table.key] = {"selection": {"rows": [3], "columns": [], "cells": []}}
    at.run()
    no_exceptions(at)
    assert at.title[0].value == "Pair inspector"
    assert at.subheader[0].value.startswith(f"crows-pairs #{pair_id} ")
    assert at.session_state["inspector.metric"] == "cps"


def test_table_filters(app_env):
    at = run_app("explorer", LINK)
    at.button(key=S + "run").click().run()
    at.selectbox(key=S + "t_verdict").set_value("stereo").run()
    table = next(d for d in at.dataframe if "sent_stereo" in d.value.columns).value
    assert (table["cps_verdict"] == "stereotypical").all()
    assert (table["cps_stereo"] > table["cps_anti"]).all()


def test_no_metric_and_missing_dataset_are_explained(app_env, monkeypatch):
    at = run_app("explorer", LINK)
    at.multiselect(key=S + "metrics").set_value([]).run()
    no_exceptions(at)
    assert "Choose at least one metric" in texts(at.info)
    bad = run_app("explorer", {"dataset": "/nonexistent/pairs.csv"})
    no_exceptions(bad)
    assert "/nonexistent/pairs.csv is outside the folders this server may read datasets from" in texts(bad.error)


@pytest.mark.parametrize("dataset", ["stereoset"])
def test_stereoset_has_types_but_no_groups(app_env, dataset):
    at = run_app("explorer", {**LINK, "dataset": dataset})
    at.button(key=S + "run").click().run()
    no_exceptions(at)
    assert "Intrasentence dev split only" in texts(at.warning)
    assert "Only CrowS-Pairs" in texts(at.info)
    assert len(at.metric) == 2


def test_before_a_run_the_time_is_estimated_from_this_machine_s_throughput(app_env):
    ui.progress._rates().clear()
    at = run_app("explorer", {"sample": str(N), "metrics": ["aul"]})
    no_exceptions(at)
    assert "Estimated time" not in texts(at.caption)  # nothing measured yet: a button offers to measure
    at.button(key=S + "estimate").click().run()
    no_exceptions(at)
    estimate = next(c.value for c in at.caption if c.value.startswith("Estimated time"))
    assert "on this machine (measured here:" in estimate and "pairs/s" in estimate
    assert not any(r.value for r in at.get("progress"))  # measuring is not the run: nothing was scored for the page
    at.button(key=S + "run").click().run()  # the run itself refines the measurement
    no_exceptions(at)
    assert len(ui.progress._rates()) == 1


def test_the_time_estimate_times_a_warm_batch_not_the_model_s_first(app_env, monkeypatch):
    """Issue 30, item 10: "about 2 min 05 s" from 3 pairs, the model's first batches; the run took 45 s."""
    import time

    import ui.runs

    calls: list[int | None] = []
    real = ui.runs.evaluate

    def slow_at_first(*args, **kwargs):  # a model's first batches: a second of warming up, then 1 ms a pair
        calls.append(kwargs.get("sample"))
        started = time.monotonic()
        result = real(*args, **kwargs)
        spent = time.monotonic() - started
        time.sleep(max(0.0, (1.0 if len(calls) == 1 else 0.001 * len(result.pairs)) - spent))
        return result

    monkeypatch.setattr(ui.runs, "evaluate", slow_at_first)
    ui.progress._rates().clear()
    at = run_app("explorer", {"sample": str(N), "metrics": ["aul"]})
    at.button(key=S + "estimate").click().run()
    no_exceptions(at)
    assert calls == [ui.runs.WARM_UP_PAIRS, ui.runs.PROBE_PAIRS]  # warmed up, then timed
    (rate,) = ui.progress._rates().values()
    assert rate > ui.runs.PROBE_PAIRS / 1.0  # the warm batch's speed, not the first second's
