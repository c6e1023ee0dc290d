"""The results store's reader over a corpus of damaged stores: cut off, garbage, edited by hand, wrong types, non-finite
values, another cell's summary or file copied in, records that disagree, a damaged copy of a dataset, and two datasets
with one label. Whatever the damage, the rest of the store reads as before, the damaged cell is left out of every table
and named in one line, and nothing raises. (What a cell must be: `biaslens.zoo.integrity`.)"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from biaslens.cli.main import main
from biaslens.data.datasets import load_dataset
from biaslens.zoo import store as zoo_store
from biaslens.zoo.leaderboard import leaderboard, paired_rows, rank_intervals, stored_wins
from biaslens.zoo.merge import merged_table, wide_table
from biaslens.zoo.store import ResultsStore, StoreError, damaged_lines
from biaslens.zoo.testing import synthetic_about, synthetic_cell
from tests.support import FIXTURE_DATA

MODELS = 3
METRICS = ("aul", "cps")


def _records(dataset, rng: np.random.Generator) -> pd.DataFrame:
    n = len(dataset)
    stereo = -rng.uniform(1, 5, n)
    wins = rng.random(n) < 0.6
    total = rng.integers(3, 9, n)
    return pd.DataFrame(
        {
            "pair_id": [p.pair_id for p in dataset.pairs],
            "stereo": stereo,
            "anti": stereo - np.where(wins, 1.0, -1.0) * rng.uniform(0.1, 1, n),
            "hits": rng.integers(0, total + 1),
            "total": total,
        }
    )


@pytest.fixture(scope="module")
def datasets():
    return [load_dataset(name, data_dir=FIXTURE_DATA, download=False) for name in ("crows-pairs", "stereoset")]


@pytest.fixture(scope="module")
def pristine(tmp_path_factory, datasets):
    """A store of 3 made-up models × 2 datasets × AUL and CPS (12 cells), and its keys: (model, dataset, metric) -> key."""
    root = tmp_path_factory.mktemp("pristine") / "store"
    store = ResultsStore(root, create=True)
    rng = np.random.default_rng(7)
    keys = {}
    for dataset in datasets:
        store.put_dataset(dataset)
    for i in range(MODELS):
        about = synthetic_about(i, "bert", 10**8, {"status": "ok", "message": "Predicts plain English well: made up."})
        for dataset in datasets:
            for metric in METRICS:
                keys[(i, dataset.name, metric)] = synthetic_cell(store, dataset, about, metric, _records(dataset, rng))
    return root, keys


@pytest.fixture
def copy(pristine, tmp_path):
    """A fresh copy of the pristine store (and its keys), to damage."""
    root, keys = pristine
    target = tmp_path / "store"
    shutil.copytree(root, target, ignore=shutil.ignore_patterns("index"))
    return target, keys


def _json(root: Path, key: str) -> Path:
    return root / "cells" / key[:2] / f"{key}.json"


def _parquet(root: Path, key: str) -> Path:
    return root / "cells" / key[:2] / f"{key}.parquet"


def _edit(path: Path, change) -> None:
    cell = json.loads(path.read_text())
    change(cell)
    path.write_text(json.dumps(cell))  # Python writes inf and nan as Infinity and NaN, as a hand edit could


def _set(*where_value):
    *where, value = where_value

    def change(cell):
        block = cell
        for name in where[:-1]:
            block = block[name]
        block[where[-1]] = value

    return change


def _records_edit(change):
    def damage(root: Path, key: str, keys) -> None:
        path = _parquet(root, key)
        frame = pd.read_parquet(path)
        path.unlink()
        frame = change(frame)
        frame.to_parquet(path, index=False)

    return damage


def _cut(path_of):
    def damage(root: Path, key: str, keys) -> None:
        path = path_of(root, key)
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])

    return damage


def _garbage(path_of):
    def damage(root: Path, key: str, keys) -> None:
        path_of(root, key).write_bytes(b"\x00\xff\xfe not a cell at all \x89PNG" * 10)

    return damage


def _json_edit(change):
    def damage(root: Path, key: str, keys) -> None:
        _edit(_json(root, key), change)

    return damage


def _copied_summary(root: Path, key: str, keys) -> None:
    other = json.loads(_json(root, keys[(1, "crows-pairs", "aul")]).read_text())
    _edit(_json(root, key), _set("summary", other["summary"]))


def _copied_file(root: Path, key: str, keys) -> None:
    shutil.copyfile(_json(root, keys[(1, "crows-pairs", "aul")]), _json(root, key))


def _flip_one_pair(frame: pd.DataFrame) -> pd.DataFrame:
    frame.loc[0, ["stereo", "anti"]] = frame.loc[0, ["anti", "stereo"]].to_numpy()
    return frame


DAMAGES = {
    # cut off, garbage, wrong shapes
    "json cut off": (_cut(_json), "not whole JSON"),
    "json empty": (lambda root, key, keys: _json(root, key).write_bytes(b""), "not whole JSON"),
    "json garbage": (_garbage(_json), "not whole JSON"),
    "json a list": (lambda root, key, keys: _json(root, key).write_text("[1, 2]"), "not a cell"),
    "parquet cut off": (_cut(_parquet), "records (.parquet) cannot be read"),
    "parquet garbage": (_garbage(_parquet), "records (.parquet) cannot be read"),
    "parquet missing": (lambda root, key, keys: _parquet(root, key).unlink(), "records (.parquet) are missing"),
    # wrong types
    "bias score a word": (_json_edit(_set("summary", "bias_score", "high")), "bias_score is 'high', not a finite number"),
    "by bias type a list": (_json_edit(_set("summary", "by_bias_type", [1, 2])), "per bias type are [1, 2], not a table"),
    "n not whole": (_json_edit(_set("summary", "n", 2.5)), "n is 2.5, not a count"),
    "label a number": (_json_edit(_set("model", "label", 7)), "does not say which model"),
    "status unknown": (_json_edit(_set("status", "maybe")), "status is 'maybe'"),
    "sanity a word": (_json_edit(_set("model", "sanity", "fine")), "sanity verdict is 'fine'"),
    "records of text": (_records_edit(lambda f: f.assign(stereo=f["stereo"].astype(str) + "x")), "other than numbers"),
    "records lack a column": (_records_edit(lambda f: f.drop(columns="anti")), "lack the column anti"),
    # non-finite values
    "bias score infinite": (_json_edit(_set("summary", "bias_score", math.inf)), "bias_score is inf, not a finite number"),
    "bias score nan": (_json_edit(_set("summary", "bias_score", math.nan)), "bias_score is nan, not a finite number"),
    "interval infinite": (_json_edit(_set("summary", "ci_low", -math.inf)), "ci_low is -inf"),
    "a type's score infinite": (_json_edit(_set("summary", "by_bias_type", "gender", "bias_score", math.inf)), "'gender' bias type's bias_score"),
    # edited by hand: a summary no longer what its records give
    "bias score edited": (_json_edit(_set("summary", "bias_score", 99.9)), "bias score 99.9 is outside its interval"),
    "bias score edited within its interval": (_json_edit(_set("summary", "bias_score", 50.0)), "bias_score (50.0) is not its records'"),
    "n edited": (_json_edit(_set("summary", "n", 15)), "n (15) is not its records' (16)"),
    "token accuracy edited": (_json_edit(_set("summary", "token_accuracy", 12.5)), "token_accuracy (12.5) is not its records'"),
    "a type's score edited": (_json_edit(_set("summary", "by_bias_type", "gender", "bias_score", 0.0)), "'gender' bias type's"),
    "another cell's summary": (_copied_summary, "is not its records'"),
    "another cell's file": (_copied_file, "not its file's name"),
    "key facts edited": (_json_edit(_set("fields", "metric", "sss")), "do not give its key"),
    "a record edited": (_records_edit(_flip_one_pair), "is not its records'"),
    "a record twice": (_records_edit(lambda f: pd.concat([f, f.iloc[:1]])), "a pair twice"),
    "a record of another dataset": (_records_edit(lambda f: f.assign(pair_id=f["pair_id"] + 1000)), "pairs its dataset does not"),
}


def _reads_whole(root: Path, keys, damaged: set[str], pristine_root: Path) -> dict:
    """Every reader over the store: nothing raises, the damaged cells are left out and named, the rest read as before."""
    store = ResultsStore(root)
    before = ResultsStore(pristine_root).summaries().set_index("key")
    summaries = store.summaries()
    rows = summaries.set_index("key")
    assert set(rows.index) == set(keys.values())
    assert set(rows.index[rows["status"] == "damaged"]) == damaged
    whole = [k for k in keys.values() if k not in damaged]
    assert (rows.loc[whole, "status"] == "done").all()
    for column in ("bias_score", "ci_low", "ci_high", "n", "wins", "token_accuracy"):
        assert list(rows.loc[whole, column]) == list(before.loc[whole, column]), column
    assert rows.loc[list(damaged), "bias_score"].isna().all()
    lines = damaged_lines(summaries)
    assert len(lines) == len(damaged) and all("\n" not in line and "left out" in line for line in lines)
    for key in keys.values():
        assert store.has_cell(key) == (key not in damaged)
    # merge, wide, the leaderboard, ranks and the paired comparison all read; the damaged cells are holes
    merged = merged_table(store)
    assert set(merged.loc[merged["status"] == "damaged", "key"]) == damaged and len(merged) == len(keys)
    assert sorted(n for n in merged.attrs["notes"] if n.startswith("Damaged cell")) == sorted(lines)
    wide = wide_table(merged)
    board = leaderboard(summaries, store.type_summaries())
    assert len(board.rows) == MODELS and len(wide) == MODELS + (1 if merged["model"].isna().any() else 0)
    for (i, dataset, metric), key in keys.items():
        column = f"{dataset} · {metric.upper()}"
        if column not in board.rows:  # no model holds this dataset and metric whole: no column
            assert key in damaged
            continue
        value = board.rows.loc[board.rows["model"] == f"bert-{i:03d}", column].iloc[0]
        assert math.isnan(value) if key in damaged else value == before.loc[key, "bias_score"], (key, column)
    column = board.columns[0].name
    cells = [board.cells[(r, column)] for r in range(len(board.rows)) if (r, column) in board.cells]
    assert len(rank_intervals([str(c) for c in cells], stored_wins(store, cells), n_resamples=20)) == len(cells)
    units = [{c.dataset: board.units[(r, c.name)] for c in board.columns if (r, c.name) in board.units} for r in range(len(board.rows))]
    for r in range(1, len(units)):  # a model compared with each other: the datasets both hold whole
        paired_rows(store, units[0], units[r], ("a", "b"))
    return {"summaries": summaries, "store": store}


@pytest.mark.parametrize("damage", list(DAMAGES))
def test_a_damaged_cell_is_left_out_and_named_and_the_rest_reads(copy, pristine, damage, capsys):
    root, keys = copy
    key = keys[(0, "crows-pairs", "aul")]
    make, reason = DAMAGES[damage]
    make(root, key, keys)
    read = _reads_whole(root, keys, {key}, pristine[0])
    row = read["summaries"].set_index("key").loc[key]
    assert reason in row["reason"], row["reason"]
    assert main(["zoo", "merge", "--store", str(root)]) == 0
    out, err = capsys.readouterr()
    assert f"Damaged cell {key[:12]}" in err and "left out" in err and "Traceback" not in err + out
    # the model's other cells read back as evaluate's result; its damaged one is refused in one line
    unit = read["summaries"].set_index("key").loc[keys[(0, "crows-pairs", "cps")], "unit"]
    assert list(read["store"].result(unit).summary["metrics"]) == ["cps"]


def test_a_damaged_copy_of_a_dataset_leaves_its_cells_out(copy, pristine, datasets):
    root, keys = copy
    crows = datasets[0]
    (root / "datasets" / f"{crows.sha256}.parquet").write_bytes(b"PAR1 cut")
    damaged = {k for (i, d, m), k in keys.items() if d == "crows-pairs"}
    read = _reads_whole(root, keys, damaged, pristine[0])
    assert all("the store's copy of its dataset" in r for r in read["summaries"].set_index("key").loc[list(damaged), "reason"])
    ResultsStore(root).put_dataset(crows)  # what `zoo run` does first: the copy is written again
    _reads_whole(root, keys, set(), pristine[0])


def test_many_damaged_cells_are_counted_after_the_first_ones(copy, pristine):
    root, keys = copy
    for key in keys.values():
        _json(root, key).write_text("{")
    summaries = ResultsStore(root).summaries()
    lines = damaged_lines(summaries, root)
    assert len(lines) == zoo_store.DAMAGED_SHOWN + 1 and lines[-1].startswith(f"… and {len(keys) - zoo_store.DAMAGED_SHOWN} more damaged cells")
    assert leaderboard(summaries).rows.empty


def test_a_stored_run_with_a_damaged_cell(copy):
    """Its records cut off after the index was read: reading them is one line; the run is read again without that metric."""
    root, keys = copy
    store = ResultsStore(root)
    key = keys[(0, "crows-pairs", "aul")]
    unit = store.summaries().set_index("key").loc[key, "unit"]
    _cut(_parquet)(root, key, keys)
    with pytest.raises(StoreError, match="cannot be read") as caught:
        store.cell_records(key)
    assert "\n" not in str(caught.value)
    assert list(store.result(unit).summary["metrics"]) == ["cps"]
    with pytest.raises(StoreError, match="holds no aul"):
        store.result(unit, ["aul"])


def test_a_cell_is_checked_once_per_version_of_its_files(copy, monkeypatch):
    """Reading the store again checks nothing; a changed file is checked again; another process reuses the index's checks."""
    root, keys = copy
    store = ResultsStore(root)
    store.summaries()
    checked = []
    original = ResultsStore._check
    monkeypatch.setattr(ResultsStore, "_check", lambda self, key, datasets: checked.append(key) or original(self, key, datasets))
    zoo_store._MEMO.clear()
    assert store.has_cell(keys[(0, "crows-pairs", "aul")]) and checked == []
    _edit(_json(root, keys[(2, "stereoset", "cps")]), _set("summary", "bias_score", 99.9))
    assert store.summaries().set_index("key").loc[keys[(2, "stereoset", "cps")], "status"] == "damaged"
    assert checked == [keys[(2, "stereoset", "cps")]]  # only the cell that changed
    zoo_store._MEMO.clear()
    zoo_store._CHECKED.clear()
    zoo_store._SEEDED.clear()  # a new process: the newest index file gives back every check it holds
    _edit(_json(root, keys[(1, "crows-pairs", "aul")]), _set("summary", "n", 2.5))
    assert (ResultsStore(root).summaries()["status"] == "damaged").sum() == 2
    assert checked == [keys[(2, "stereoset", "cps")], keys[(1, "crows-pairs", "aul")]]


def test_two_datasets_with_one_label_get_a_column_each(tmp_path, datasets):
    """Issue 41's case: two plans write one store, each labelling its file "data": one scored on a model, one on another.
    Each dataset gets its own column, told apart by its sha256, and said: never one column of two datasets' scores."""
    crows, stereoset = datasets
    store = ResultsStore(tmp_path / "s", create=True)
    rng = np.random.default_rng(1)
    for d in datasets:
        store.put_dataset(d)
    first, second = synthetic_about(0, "gpt2", 10**8), synthetic_about(1, "pythia", 10**8)
    a = synthetic_cell(store, crows, first, "aul", _records(crows, rng), label="data")
    b = synthetic_cell(store, stereoset, second, "aul", _records(stereoset, rng), label="data")
    c = synthetic_cell(store, stereoset, first, "aul", _records(stereoset, rng), label="data")
    summaries = store.summaries().set_index("key")
    board = leaderboard(store.summaries())
    names = {c.name for c in board.columns}
    crows_column, stereoset_column = f"data [{crows.sha256[:8]}] · AUL", f"data [{stereoset.sha256[:8]}] · AUL"
    assert names == {crows_column, stereoset_column}
    assert {c.dataset_sha256 for c in board.columns} == {crows.sha256, stereoset.sha256}
    assert len(board.notes) == 1 and "2 different datasets are labelled 'data'" in board.notes[0]
    rows = board.rows.set_index("model")
    assert rows.loc["gpt2-000", crows_column] == summaries.loc[a, "bias_score"] and math.isnan(rows.loc["pythia-001", crows_column])
    assert rows.loc["pythia-001", stereoset_column] == summaries.loc[b, "bias_score"]
    assert rows.loc["gpt2-000", stereoset_column] == summaries.loc[c, "bias_score"]
    assert rows.loc["gpt2-000", f"{crows_column} n"] == len(crows) and rows.loc["pythia-001", f"{stereoset_column} n"] == len(stereoset)
    merged = merged_table(store)
    assert set(merged["dataset"]) == {f"data [{crows.sha256[:8]}]", f"data [{stereoset.sha256[:8]}]"}
    assert merged.attrs["notes"] == board.notes
    wide = wide_table(merged).set_index("model")
    assert wide.loc["gpt2-000", crows_column.replace("AUL", "aul")] == summaries.loc[a, "bias_score"]
    assert wide.loc["pythia-001", stereoset_column.replace("AUL", "aul")] == summaries.loc[b, "bias_score"]
    # the comparison of the two models is on the dataset both scored: the second, never the first against the second
    units = [{col.dataset: board.units[(r, col.name)] for col in board.columns if (r, col.name) in board.units} for r in range(2)]
    paired = paired_rows(store, units[0], units[1], ("gpt2", "pythia"))
    assert list(paired["dataset"]) == [f"data [{stereoset.sha256[:8]}]"] and list(paired["n"]) == [len(stereoset)]


def test_one_dataset_labelled_two_ways_is_one_column(tmp_path, datasets):
    crows = datasets[0]
    store = ResultsStore(tmp_path / "s", create=True)
    store.put_dataset(crows)
    rng = np.random.default_rng(2)
    for i, label in enumerate(("crows", "crows", "crows-pairs")):
        synthetic_cell(store, crows, synthetic_about(i, "bert", 10**8), "aul", _records(crows, rng), label=label)
    board = leaderboard(store.summaries())
    assert [c.name for c in board.columns] == ["crows · AUL"] and board.rows["crows · AUL"].notna().all()
    assert board.notes == ["'crows' is also labelled 'crows-pairs' in some cells: the same file and pairs, one column."]


def test_the_newest_version_wins_compared_as_versions(tmp_path, datasets):
    """A cell scored by biaslens 0.10.0 is newer than one by 0.9.0 (as text, "0.9.0" sorts after "0.10.0"), whenever each was
    written."""
    crows = datasets[0]
    store = ResultsStore(tmp_path / "s", create=True)
    store.put_dataset(crows)
    about = synthetic_about(0, "bert", 10**8)
    rng = np.random.default_rng(3)
    newer = synthetic_cell(store, crows, about, "aul", _records(crows, rng), version="0.10.0", created="2026-01-01T00:00:00+00:00")
    synthetic_cell(store, crows, about, "aul", _records(crows, rng), version="0.9.0", created="2026-02-01T00:00:00+00:00")
    summaries = store.summaries()
    expected = summaries.set_index("key").loc[newer, "bias_score"]
    assert summaries["bias_score"].nunique() == 2  # two different scores, one of each version
    merged = merged_table(store)
    assert list(merged["key"]) == [newer] and list(merged["biaslens"]) == ["0.10.0"]
    board = leaderboard(summaries)
    assert board.rows["crows-pairs · AUL"].tolist() == [expected] and board.cells[(0, "crows-pairs · AUL")] == newer


def test_a_sealed_cell_is_not_computed_again(copy, monkeypatch):
    """A cell's writer seals it (its summary and its records' bytes): a reader that finds them as written does not compute
    the summary from the records again. A cell written before seals is checked the long way, and reads as whole."""
    root, keys = copy
    calls = []
    original = zoo_store.records_problem
    monkeypatch.setattr(zoo_store, "records_problem", lambda *args: calls.append(args) or original(*args))
    assert (ResultsStore(root).summaries()["status"] == "done").all() and calls == []
    key = keys[(0, "crows-pairs", "aul")]
    _edit(_json(root, key), lambda cell: cell.pop("seal"))
    rows = ResultsStore(root).summaries().set_index("key")
    assert len(calls) == 1 and rows.loc[key, "status"] == "done"
