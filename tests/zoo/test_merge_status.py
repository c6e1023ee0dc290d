"""`zoo merge` and `zoo status` on a store filled by jobs run in this process; the command line around them."""

from __future__ import annotations

import json
import shutil

import pandas as pd
import pytest

from biaslens.cli.main import main
from biaslens.zoo.merge import MERGED_COLUMNS, merged_table, wide_table, write_table
from biaslens.zoo.plan import load_plan
from biaslens.zoo.status import plan_status
from biaslens.zoo.store import ResultsStore
from tests.support import FIXTURE_DATA
from tests.support.zoo import fill_store

SUMMARY_FIELDS = ("bias_score", "ci_low", "ci_high", "n", "wins", "ties", "undecidable", "token_accuracy")


@pytest.fixture(scope="module")
def scored_plan(tmp_path_factory, model_dirs):
    """A plan of three models × two datasets (the third cannot load), the first two scored, the third tried."""
    from tests.zoo.conftest import plan_text

    folder = tmp_path_factory.mktemp("zoo")
    broken = folder / "broken"
    broken.mkdir()
    shutil.copy(model_dirs["albert"] / "config.json", broken / "config.json")
    path = folder / "plan.toml"
    path.write_text(
        plan_text(
            [{"id": str(model_dirs["bert-cased"])}, {"id": str(model_dirs["roberta"]), "metrics": ["aul"]}, {"id": str(broken), "label": "broken"}],
            extra='metrics = ["aul", "cps"]',
        )
    )
    return fill_store(load_plan(path))


def test_the_merged_table_is_what_evaluate_gives(scored_plan, tiny_models):
    from biaslens import evaluate, load_dataset

    table = merged_table(ResultsStore(scored_plan.store), scored_plan)
    assert list(table.columns) == list(MERGED_COLUMNS) and len(table) == 2 * 2 + 2 * 1 + 2 * 2
    done = table[table["status"] == "done"]
    assert len(done) == 6 and set(table.loc[table["model"] == "broken", "status"]) == {"load-failed"}
    assert table.loc[table["model"] == "broken", "reason"].str.len().min() > 0
    for family, label, metrics in (("bert-cased", "bert-cased", ["aul", "cps"]), ("roberta", "roberta", ["aul"])):
        for name in ("crows-pairs", "stereoset"):
            expected = evaluate(tiny_models[family], load_dataset(name, data_dir=FIXTURE_DATA, download=False), metrics)
            for metric in metrics:
                row = done[(done["model"] == label) & (done["dataset"] == name) & (done["metric"] == metric)].iloc[0]
                want = expected.summary["metrics"][metric]
                for field in SUMMARY_FIELDS:
                    assert row[field] == pytest.approx(want[field]), (label, name, metric, field)


def test_the_table_of_a_whole_store_and_the_wide_table(scored_plan):
    store = ResultsStore(scored_plan.store)
    every = merged_table(store)
    assert len(every) == 6 and set(every["status"]) == {"done"}
    assert list(every["metric"][every["model"] == "bert-cased"]) == ["aul", "cps", "aul", "cps"]  # registry order per dataset
    wide = wide_table(merged_table(store, scored_plan))
    assert list(wide["model"]) == ["bert-cased", "roberta", "broken"]
    assert list(wide.columns[:4]) == ["model", "crows-pairs · aul", "crows-pairs · aul low", "crows-pairs · aul high"]
    assert wide.loc[wide["model"] == "broken"].iloc[0, 1:].isna().all() and wide.loc[wide["model"] == "roberta", "crows-pairs · cps"].isna().all()


@pytest.mark.parametrize("suffix", [".csv", ".json", ".parquet"])
def test_the_table_is_written_in_three_formats(scored_plan, tmp_path, suffix):
    table = merged_table(ResultsStore(scored_plan.store), scored_plan)
    path = write_table(table, tmp_path / f"zoo{suffix}")
    back = {".csv": pd.read_csv, ".parquet": pd.read_parquet, ".json": lambda p: pd.DataFrame(json.loads(p.read_text()))}[suffix](path)
    assert len(back) == len(table) and list(back.columns) == list(MERGED_COLUMNS)
    assert back["bias_score"].astype(float).round(9).tolist() == pytest.approx(table["bias_score"].astype(float).round(9).tolist(), nan_ok=True)


def test_the_status_of_each_model(scored_plan):
    status = plan_status(scored_plan)
    frame = status.frame.set_index("model")
    assert list(frame["state"]) == ["done", "done", "load-failed"]
    assert frame.loc["bert-cased", "done"] == 4 and frame.loc["roberta", "cells"] == 2 and frame.loc["broken", "missing"] == 4
    lines = status.lines()
    assert "load-failed" in lines[2] and "4/4 cells" in lines[0] and lines[-1].startswith("3 models: 2 done, 1 load-failed; 6 of 10 known cells")


def test_the_commands(scored_plan, tmp_path, capsys):
    path = str(scored_plan.path)
    assert main(["zoo", "status", path]) == 0
    assert "broken" in capsys.readouterr().out
    assert main(["zoo", "merge", path]) == 0
    printed = capsys.readouterr().out
    assert "crows-pairs" in printed and "load-failed" in printed and "[" in printed
    assert main(["zoo", "merge", "--store", str(scored_plan.store), "--output", str(tmp_path / "all.parquet")]) == 0
    assert len(pd.read_parquet(tmp_path / "all.parquet")) == 6
    assert main(["zoo", "merge", path, "--wide", "--output", str(tmp_path / "wide.csv")]) == 0
    assert list(pd.read_csv(tmp_path / "wide.csv")["model"]) == ["bert-cased", "roberta", "broken"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["zoo", "merge"], "Name a plan, or the results store with --store"),
        (["zoo", "merge", "--store", "{tmp}"], "is not a biaslens results store"),
        (["zoo", "status", "{tmp}/absent.toml"], "no such plan file"),
        (["zoo", "run", "{tmp}/absent.toml"], "no such plan file"),
        (["zoo", "merge", "--store", "{store}", "--output", "{tmp}/x.xlsx"], "Cannot tell the format"),
        (["zoo", "merge", "--store", "{store}", "--format", "csv"], "--format needs --output"),
    ],
)
def test_errors_are_one_line_and_exit_2(scored_plan, tmp_path, capsys, argv, message):
    argv = [a.format(tmp=tmp_path, store=scored_plan.store) for a in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_bad_option_values_are_refused_by_the_parser(capsys):
    for argv in (
        ["zoo", "run", "p.toml", "--time", "soon"],
        ["zoo", "run", "p.toml", "--executor", "pbs"],
        ["zoo", "run", "p.toml", "--retries", "-1"],
    ):
        with pytest.raises(SystemExit) as caught:
            main(argv)
        assert caught.value.code == 2
    assert "is not a time" in capsys.readouterr().err


def test_a_model_being_scored_shows_as_running(write_plan, model_dirs):
    """A live lock on one of its cells: the model is running, by that run's job on that host; its record gives the progress."""
    from biaslens.zoo.cells import load_datasets, planned_cells
    from biaslens.zoo.store import Owner

    plan = load_plan(write_plan([{"id": str(model_dirs["roberta"])}], datasets='["stereoset"]', extra='metrics = ["aul"]'))
    store = ResultsStore(plan.store, create=True)
    assert plan_status(plan).frame["state"].tolist() == ["pending"]
    (cell,) = planned_cells(plan.models[0], store, load_datasets(plan))
    run = store.new_run({"plan": str(plan.path), "models": [{"index": 0, "id": plan.models[0].id, "label": "roberta"}]})
    store.write_job(run, 0, {"state": "scoring", "unit": "stereoset · float32", "done": 3, "total": 7, "job_id": "12_0"}, side="worker")
    assert store.try_lock(cell.key, Owner.here(run, 0, "12_0"))
    row = plan_status(plan).frame.iloc[0]
    assert row["state"] == "running" and row["running"] == 1 and f"run {run} job 12_0" in row["detail"]
    assert row["progress"] == "43% of stereoset · float32"
