"""BBQ and Winogender in the zoo (their plan checks: test_plan.py): a job that scores them into cells of their own (one per headline
statistic and choice convention), cells equal to `evaluate_choices`'s run on the same model and items, and damaged ones
left out and rescored."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest

from biaslens.choices.conventions import HEADLINE_STATISTICS
from biaslens.choices.evaluation import evaluate_choices
from biaslens.choices.statistics import ALL
from biaslens.data.multiple_choice import read_choice_path
from biaslens.engine.models import load_model
from biaslens.errors import InputError
from biaslens.zoo.cells import load_datasets, planned_cells
from biaslens.zoo.choicecells import RECORD_COLUMNS, choice_statistics
from biaslens.zoo.plan import load_plan
from biaslens.zoo.store import ResultsStore
from biaslens.zoo.worker import ModelTask, run_model
from tests.support import FIXTURE_DATA, SHARED


def _task(plan, index: int = 0, run_id: str = "run-1") -> ModelTask:
    ResultsStore(plan.store, create=True)
    return ModelTask(str(plan.store), run_id, plan.models[index], plan.data_dir, plan.download)


# -- a job, and its cells against evaluate_choices ------------------------------------------------------


def _scored(write_plan, model: str, datasets: str, extra: str = 'choice_conventions = ["lm-eval", "original"]'):
    plan = load_plan(write_plan([{"id": model}], datasets=datasets, extra=extra))
    outcome = run_model(_task(plan))
    return plan, outcome, ResultsStore(plan.store)


def _cells(store: ResultsStore, outcome) -> dict[tuple[str, str, str], dict]:
    found = {}
    for key in outcome.cells:
        cell = store.read_cell(key)
        found[(cell["dataset"]["label"], cell["fields"]["convention"], cell["fields"]["metric"])] = cell
    return found


def _same(a, b) -> bool:
    return (a is None and b is None) or (a is not None and b is not None and math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-12))


def _breakdown_row(run, convention: str, **levels) -> pd.Series:
    table = run.breakdown[run.breakdown["convention"] == convention]
    for dim in ("category", "condition", "polarity"):
        table = table[table[dim] == levels.get(dim, ALL)]
    (row,) = table.to_dict(orient="records")
    return row


@pytest.mark.parametrize("kind", ["causal", "masked"])
def test_a_cell_holds_what_evaluate_choices_gives_on_the_same_model_and_items(write_plan, model_dirs, causal_dirs, kind):
    model = str(causal_dirs["gpt2"] if kind == "causal" else model_dirs["bert-cased"])
    plan, outcome, store = _scored(write_plan, model, '["bbq", {name = "winogender", limit = 10}]')
    n_stats = 2 * len(HEADLINE_STATISTICS["bbq"]) + len(HEADLINE_STATISTICS["winogender"])
    assert outcome.state == "finished" and len(outcome.cells) == n_stats
    assert set(outcome.cells) == {c.key for c in planned_cells(plan.models[0], store, load_datasets(plan))}
    cells = _cells(store, outcome)
    lm = load_model(model)
    bbq = evaluate_choices(lm, read_choice_path(FIXTURE_DATA / "bbq"), "lm-eval,original")
    wino = evaluate_choices(lm, read_choice_path(FIXTURE_DATA / "winogender"), "lm-eval", limit=10)
    for (label, convention, statistic), cell in cells.items():
        run = bbq if label == "bbq" else wino
        if cell["status"] == "unavailable":
            assert run.statistics(convention)[statistic] is None
            continue
        summary = cell["summary"]
        assert _same(summary["bias_score"], run.statistics(convention)[statistic]), (label, convention, statistic)
        assert cell["kind"] == "choices" and cell["model"]["kind"] == kind and cell["model"]["sanity"]["status"] in ("ok", "weak", "untrained")
        if statistic in ("acc", "amb_bias_score", "disamb_bias_score"):  # the intervals are ChoiceRun's breakdown's
            row = _breakdown_row(run, convention)
            low, high = {"acc": ("accuracy_low", "accuracy_high"), "amb_bias_score": ("amb_low", "amb_high")}.get(
                statistic, ("disamb_low", "disamb_high")
            )
            assert _same(summary["ci_low"], row[low]) and _same(summary["ci_high"], row[high])
        if statistic == "accuracy_amb":
            row = _breakdown_row(run, convention, condition="ambig")
            assert _same(summary["ci_low"], row["accuracy_low"]) and summary["n"] == row["n"]
        for category, block in summary.get("by_bias_type", {}).items():  # lm-eval's per-category bias scores
            assert _same(block["bias_score"], run.statistics(convention)[f"{statistic}_{category}"])
        records = store.cell_records(cell["key"])
        assert list(records.columns) == list(RECORD_COLUMNS)
        answers = run.answers.set_index("item_id")
        assert records["answer"].tolist() == answers.loc[records["item_id"], f"{convention}:answer"].tolist()
        first = records.iloc[0]
        lls = run.choices[run.choices["item_id"] == first["item_id"]].set_index("text")["ll"]
        # each offered choice's log-likelihood (float32 sums: the job scores in chunks through the store's cache)
        assert list(first["ll"]) == pytest.approx([lls[t] for t in first["offered"]], rel=1e-6)
    assert not list((store.root / "locks").glob("*.lock"))
    again = run_model(_task(plan, run_id="run-2"))
    assert again.count("scored") == 0 and again.count("stored") + again.count("unavailable") == n_stats


def test_a_sample_of_items_is_scored_and_kept_apart(write_plan, causal_dirs):
    plan, outcome, store = _scored(write_plan, str(causal_dirs["gpt2"]), '[{name = "bbq", sample = 10, seed = 3}]', extra="")
    cell = next(c for c in _cells(store, outcome).values() if c["fields"]["metric"] == "acc")
    assert cell["fields"]["selection"] == {"sample": 10, "seed": 3} and cell["summary"]["n"] == 10
    assert len(store.cell_records(cell["key"])) == 10


def test_damaged_choice_cells_are_left_out_and_rescored(write_plan, causal_dirs):
    plan, outcome, store = _scored(write_plan, str(causal_dirs["gpt2"]), '["bbq-age"]', extra="")
    cells = _cells(store, outcome)
    acc = cells[("bbq-age", "lm-eval", "acc")]
    path = store.root / "cells" / acc["key"][:2] / f"{acc['key']}.json"
    edited = json.loads(path.read_text())
    edited["summary"]["bias_score"] = 0.99
    path.write_text(json.dumps(edited))
    rows = store.summaries().set_index("key")
    assert rows.loc[acc["key"], "status"] == "damaged" and "not its records'" in rows.loc[acc["key"], "reason"]
    assert run_model(_task(plan, run_id="run-2")).count("scored") == 1
    assert ResultsStore(plan.store).summaries().set_index("key").loc[acc["key"], "status"] == "done"


@pytest.mark.shared
def test_the_shared_bbq_and_winogender_files_run_in_a_plan(write_plan, causal_dirs, model_dirs):
    datasets = f'[{{name = "{SHARED / "data" / "bbq" / "Age.jsonl"}", limit = 40}}, {{name = "{SHARED / "data" / "winogender"}", limit = 40}}]'
    for model in (causal_dirs["gpt2"], model_dirs["roberta"]):
        plan, outcome, store = _scored(write_plan, str(model), datasets, extra="")
        assert outcome.state == "finished" and outcome.count("scored") >= 8
        rows = store.summaries()
        assert set(rows["status"]) <= {"done", "unavailable"} and set(rows["dataset_label"]) == {"Age", "winogender"}


# -- damaged choice cells: the store's integrity corpus, of the new kind ------------------------------------


@pytest.fixture(scope="module")
def scored_bbq(tmp_path_factory, causal_dirs):
    """A store holding a tiny causal model's cells of the fixture BBQ (lm-eval), and their keys by statistic."""
    from tests.zoo.conftest import plan_text

    folder = tmp_path_factory.mktemp("choice-store")
    (folder / "plan.toml").write_text(plan_text([{"id": str(causal_dirs["gpt2"])}], datasets='["bbq"]'), encoding="utf-8")
    plan = load_plan(folder / "plan.toml")
    outcome = run_model(_task(plan))
    store = ResultsStore(plan.store)
    return plan.store, {store.read_cell(k)["fields"]["metric"]: k for k, v in outcome.cells.items() if v == "scored"}


def _edit_json(change):
    def damage(root, key):
        path = root / "cells" / key[:2] / f"{key}.json"
        cell = json.loads(path.read_text())
        change(cell)
        path.write_text(json.dumps(cell))

    return damage


def _edit_records(change):
    def damage(root, key):
        path = root / "cells" / key[:2] / f"{key}.parquet"
        frame = change(pd.read_parquet(path))
        path.unlink()
        frame.to_parquet(path, index=False)

    return damage


def _flip_first_answer(frame: pd.DataFrame) -> pd.DataFrame:
    frame.loc[0, "correct"] = not frame.loc[0, "correct"]
    return frame


def _summary(name, value):
    return _edit_json(lambda cell: cell["summary"].__setitem__(name, value))


CHOICE_DAMAGES = {
    "value edited": ("disamb_bias_score", _summary("bias_score", 0.123), "bias_score (0.123) is not its records'"),
    "value a word": ("acc", _summary("bias_score", "high"), "value is 'high', not a finite number"),
    "value infinite": ("acc", _summary("bias_score", math.inf), "value is inf, not a finite number"),
    "interval edited": ("acc", _summary("ci_high", 0.999), "ci_high (0.999) is not its records'"),
    "n edited": ("accuracy_amb", _summary("n", 1000), "n (1000) is not its records'"),
    "another statistic's summary": ("acc", _summary("statistic", "accuracy_amb"), "is of 'accuracy_amb', not its statistic 'acc'"),
    "a category's score edited": (
        "amb_bias_score",
        _edit_json(lambda cell: next(iter(cell["summary"]["by_bias_type"].values())).__setitem__("bias_score", 0.5)),
        "category's bias_score (0.5) is not its records'",
    ),
    "kind edited": ("acc", _edit_json(lambda cell: cell.__setitem__("kind", "pairs")), "not a multiple-choice cell"),
    "an answer edited": ("acc", _edit_records(_flip_first_answer), "is not its records'"),
    "an item twice": ("acc", _edit_records(lambda f: pd.concat([f, f.iloc[:1]])), "an item twice"),
    "an item of another dataset": ("acc", _edit_records(lambda f: f.assign(item_id=f["item_id"] + 1000)), "items its dataset does not"),
    "records lack a column": ("acc", _edit_records(lambda f: f.drop(columns="known")), "lack the column known"),
    "records missing": ("acc", lambda root, key: (root / "cells" / key[:2] / f"{key}.parquet").unlink(), "records (.parquet) are missing"),
}


@pytest.mark.parametrize("damage", list(CHOICE_DAMAGES))
def test_a_damaged_choice_cell_is_left_out_and_named(scored_bbq, tmp_path, damage, capsys):
    import shutil

    from biaslens.cli.main import main
    from biaslens.zoo.store import damaged_lines

    root, keys = scored_bbq
    target = tmp_path / "store"
    shutil.copytree(root, target, ignore=shutil.ignore_patterns("index"))
    statistic, make, reason = CHOICE_DAMAGES[damage]
    make(target, keys[statistic])
    summaries = ResultsStore(target).summaries()
    rows = summaries.set_index("key")
    assert rows.loc[keys[statistic], "status"] == "damaged" and reason in rows.loc[keys[statistic], "reason"], rows.loc[keys[statistic], "reason"]
    assert (rows.drop(index=keys[statistic])["status"] == "done").all()  # the rest reads as before
    (line,) = damaged_lines(summaries)
    assert "left out" in line and "\n" not in line
    assert main(["zoo", "merge", "--store", str(target)]) == 0
    out, err = capsys.readouterr()
    assert f"Damaged cell {keys[statistic][:12]}" in err and "Traceback" not in out + err


# -- zoo status, zoo merge (--wide), the leaderboard -------------------------------------------------------


@pytest.fixture(scope="module")
def mixed_plan(tmp_path_factory, causal_dirs, model_dirs):
    """A plan of a causal and a masked model over BBQ's Age fixture (lm-eval and original), Winogender and CrowS-Pairs
    (AUL and CPS), every cell scored."""
    from tests.zoo.conftest import plan_text

    folder = tmp_path_factory.mktemp("mixed")
    models = [{"id": str(causal_dirs["gpt2"]), "label": "gpt2"}, {"id": str(model_dirs["bert-cased"]), "label": "bert"}]
    extra = 'choice_conventions = ["lm-eval", "original"]\nmetrics = ["aul", "cps"]'
    text = plan_text(models, datasets='["bbq-age", "winogender", "crows-pairs"]', extra=extra)
    (folder / "plan.toml").write_text(text, encoding="utf-8")
    plan = load_plan(folder / "plan.toml")
    for index in range(2):
        run_model(_task(plan, index))
    return plan


def test_merge_status_and_wide_hold_the_choice_statistics(mixed_plan):
    from biaslens.zoo.merge import merged_table, wide_table
    from biaslens.zoo.status import plan_status

    store = ResultsStore(mixed_plan.store)
    table = merged_table(store, mixed_plan)
    assert set(table["status"]) <= {"done", "unavailable"}
    choice = table[table["dataset"].isin(["bbq-age", "winogender"])]
    assert set(choice["metric"]) == set(HEADLINE_STATISTICS["bbq"]) | set(HEADLINE_STATISTICS["winogender"])
    for row in choice[choice["status"] == "done"].to_dict(orient="records"):
        assert _same(row["bias_score"], store.read_cell(row["key"])["summary"]["bias_score"])
        assert (row["ideal"], row["better"]) == ((0.0, "closest") if "bias_score" in row["metric"] else (1.0, "highest"))
    pair = table[table["dataset"] == "crows-pairs"]
    assert set(pair["metric"]) == {"aul", "cps", "aul_c", "cps_c"} & set(pair["metric"]) and (pair["ideal"] == 50.0).all()
    assert set(table.loc[table["dataset"] == "bbq-age", "convention"]) == {"lm-eval", "original"}
    wide = wide_table(table)
    assert "bbq-age · acc · lm-eval" in wide.columns and "bbq-age · disamb_bias_score · original high" in wide.columns
    assert "winogender · acc_gotcha · lm-eval" in wide.columns and "winogender · acc · original" not in wide.columns
    status = plan_status(mixed_plan).frame
    assert (status["missing"] == 0).all() and (status["state"] == "done").all() and (status["done"] > 0).all()
    # the whole store, without the plan: the same rows
    assert len(merged_table(store)) == len(table)


def test_the_leaderboard_has_choice_columns_ranked_by_their_own_ideal(mixed_plan):
    from biaslens.zoo.leaderboard import choices, leaderboard, paired_rows

    store = ResultsStore(mixed_plan.store)
    summaries, types = store.summaries(), store.type_summaries()
    offered = choices(summaries, types)
    assert offered.conventions == ["default"] and set(offered.choice_conventions) == {"lm-eval", "original"}
    assert "Age" in offered.bias_types  # BBQ's categories: the per-category bias scores
    board = leaderboard(summaries, types, choice_convention="original")
    assert board.convention == "default" and board.choice_convention == "original"
    names = [c.name for c in board.columns]
    assert "bbq-age · acc" in names and "winogender · acc" not in names  # winogender has no original reading
    acc = board.column("bbq-age · acc")
    pair = next(c for c in board.columns if c.dataset == "crows-pairs")
    assert (acc.ideal, acc.better, acc.choice) == (1.0, "highest", True) and (pair.ideal, pair.choice) == (50.0, False)
    original = summaries[(summaries["metric"] == "acc") & (summaries["convention"] == "original")]
    for row in original.to_dict(orient="records"):
        assert _same(float(board.rows.loc[board.rows["model"] == row["model_label"], "bbq-age · acc"].iloc[0]), row["bias_score"])
    best = board.sorted("bbq-age · disamb_bias_score", "closest")["bbq-age · disamb_bias_score"].abs().tolist()
    assert best == sorted(best)  # closest to 0 first
    assert len(original) == 2
    lm_eval = leaderboard(summaries, types)
    assert lm_eval.choice_convention == "lm-eval" and "winogender · acc_gotcha" in [c.name for c in lm_eval.columns]
    units = [{c.dataset: lm_eval.units[(r, c.name)] for c in lm_eval.columns if (r, c.name) in lm_eval.units} for r in range(2)]
    # the choice datasets are not pairs: left out of the paired comparison (here a causal and a masked model share no
    # pair metric either: one line)
    with pytest.raises(InputError, match="share no dataset and metric"):
        paired_rows(store, units[0], units[1], ("a", "b"))


def test_the_commands_print_the_choice_statistics(mixed_plan, capsys, tmp_path):
    from biaslens.cli.main import main

    assert main(["zoo", "status", str(mixed_plan.path)]) == 0
    assert main(["zoo", "merge", str(mixed_plan.path), "--wide", "--output", str(tmp_path / "wide.csv")]) == 0
    wide = pd.read_csv(tmp_path / "wide.csv")
    assert "bbq-age · amb_bias_score · lm-eval" in wide.columns
    assert main(["zoo", "merge", str(mixed_plan.path)]) == 0
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err and "accuracy_disamb" in out
    # a statistic is a fraction to three places, a pair metric's bias score a percentage to one (in both tables)
    summaries = ResultsStore(mixed_plan.store).summaries()
    cell = summaries[summaries["metric"] == "accuracy_disamb"].iloc[0]
    pair = summaries[~summaries["metric"].isin(choice_statistics())].iloc[0]
    long = f"{cell['bias_score']:5.3f} [{cell['ci_low']:.3f}, {cell['ci_high']:.3f}]"
    assert long in out and f"{pair['bias_score']:5.1f} [{pair['ci_low']:.1f}, {pair['ci_high']:.1f}]" in out
    assert main(["zoo", "merge", str(mixed_plan.path), "--wide"]) == 0
    out = capsys.readouterr().out
    assert f"{cell['ci_low']:.3f}" in out and f"{pair['ci_low']:.1f}" in out and f"{pair['ci_low']:.3f}" not in out


def test_a_store_of_choice_cells_is_imported_whole(scored_bbq, tmp_path):
    from biaslens.zoo.importing import import_store

    root, keys = scored_bbq
    report = import_store(root, tmp_path / "target")
    assert not report.damaged and report.copied == len(list(root.glob("cells/*/*.json"))) and report.datasets == 1
    source, target = ResultsStore(root).summaries(), ResultsStore(tmp_path / "target").summaries()
    assert (target["status"] == "done").sum() == len(keys)
    columns = ["key", "metric", "bias_score", "ci_low", "ci_high", "n"]
    assert target.sort_values("key")[columns].reset_index(drop=True).equals(source.sort_values("key")[columns].reset_index(drop=True))


# -- the whole way: `run_plan` on the local executor and on the real single-node Slurm ---------------------------


@pytest.fixture(params=["local", "slurm"])
def executor(request):
    """Each executor's name; the Slurm one with its cluster running (tests/support/slurm.py)."""
    if request.param == "slurm":
        request.getfixturevalue("slurm_cluster")
    return request.param


@pytest.mark.slow
def test_a_plan_with_bbq_runs_on_each_executor(executor, write_plan, causal_dirs, model_dirs):
    from biaslens.zoo.executors import ExecutorOptions, run_plan
    from biaslens.zoo.merge import merged_table

    models = [{"id": str(causal_dirs["gpt2"]), "label": "gpt2"}, {"id": str(model_dirs["bert-cased"]), "label": "bert"}]
    plan = load_plan(write_plan(models, datasets='["bbq-age", "crows-pairs"]', extra='metrics = ["aul"]\ndevice = "cpu"'))
    if executor == "slurm":
        options = ExecutorOptions.from_plan(plan, "slurm", gpus_per_job=0, cpus_per_job=1, time_min=30)
    else:
        options = ExecutorOptions.from_plan(plan, "local", gpus_per_job=0, time_min=30, max_parallel=2)
    lines: list[str] = []
    report = run_plan(plan, options=options, log=lines.append)
    assert [m.state for m in report.models] == ["done", "done"], lines
    table = merged_table(ResultsStore(plan.store), plan)
    bbq = table[table["dataset"] == "bbq-age"]
    assert len(bbq) == 2 * len(HEADLINE_STATISTICS["bbq"]) and set(bbq["status"]) <= {"done", "unavailable"}
    assert set(table.loc[table["dataset"] == "crows-pairs", "status"]) == {"done"}
