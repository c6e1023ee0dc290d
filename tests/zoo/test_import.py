"""`biaslens zoo import`: a store scored elsewhere copied into another, every cell checked, nothing overwritten."""

from __future__ import annotations

import json

import pytest

from biaslens.cli.main import main
from biaslens.data.datasets import load_dataset
from biaslens.zoo.importing import import_store
from biaslens.zoo.merge import merged_table
from biaslens.zoo.store import ResultsStore
from biaslens.zoo.testing import synthetic_store
from tests.support import FIXTURE_DATA


@pytest.fixture
def stores(tmp_path):
    """Two stores of the same made-up models: "elsewhere" (3 models × AUL, CPS) and "here" (the first 2 × AUL, other
    scores: the same keys, other numbers, as two clusters' nondeterministic runs could give)."""
    dataset = load_dataset("crows-pairs", data_dir=FIXTURE_DATA)
    elsewhere = synthetic_store(tmp_path / "elsewhere", [dataset], models=3, metrics=("aul", "cps"))
    here = synthetic_store(tmp_path / "here", [dataset], models=2, metrics=("aul",), seed=1)
    return elsewhere, here


def test_cells_datasets_and_models_are_copied_and_a_different_cell_never_overwrites(stores, tmp_path):
    elsewhere, here = stores
    before = {k: here.read_cell(k) for k in here.summaries()["key"]}
    fresh = import_store(elsewhere.root, tmp_path / "new")  # into a store made for it
    assert (fresh.copied, fresh.already, fresh.conflicts, fresh.damaged, fresh.datasets) == (6, 0, [], [], 1)
    assert merged_table(ResultsStore(tmp_path / "new")).equals(merged_table(elsewhere))
    report = import_store(elsewhere.root, here.root)
    assert (report.copied, report.already, len(report.conflicts)) == (4, 0, 2) and report.datasets == 0
    assert all("the target holds other scores under the same key; kept the target's" in line for line in report.conflicts)
    assert all(here.read_cell(k) == cell for k, cell in before.items())  # the target's own cells untouched
    assert len(here.summaries()) == 6
    again = import_store(elsewhere.root, here.root)
    assert (again.copied, again.already, len(again.conflicts)) == (0, 4, 2)


def test_a_damaged_cell_is_left_out_with_its_reason(stores, tmp_path):
    elsewhere, _ = stores
    keys = list(elsewhere.summaries()["key"])
    edited = elsewhere._cell_path(keys[0], ".json")
    cell = json.loads(edited.read_text())
    cell["fields"]["metric"] = "aul" if cell["fields"]["metric"] == "cps" else "cps"  # its facts no longer make its key
    edited.write_text(json.dumps(cell))
    elsewhere._cell_path(keys[1], ".parquet").write_bytes(b"PAR1 not really")  # records that do not read back
    elsewhere._cell_path(keys[2], ".json").write_text("{")  # truncated
    report = import_store(elsewhere.root, tmp_path / "new")
    assert report.copied == 3 and len(report.damaged) == 3, report.damaged
    said = "\n".join(report.damaged)
    assert "its key is not the digest of its facts (edited?)" in said and "its per-pair records do not read back" in said
    assert f"cell {keys[2][:12]}…: not valid JSON (truncated, or not a cell)" in said
    assert not ResultsStore(tmp_path / "new").has_cell(keys[0])


def test_the_command(stores, tmp_path, capsys):
    elsewhere, here = stores
    assert main(["zoo", "import", str(elsewhere.root), "--store", str(tmp_path / "new")]) == 0
    assert (
        capsys.readouterr()
        .out.strip()
        .endswith(
            "6 cells imported from {} into {}, 0 already there; 1 datasets and 0 model records copied.".format(elsewhere.root, tmp_path / "new")
        )
    )
    assert main(["zoo", "import", str(elsewhere.root), "--store", str(here.root)]) == 1  # two conflicts: left out, said
    out = capsys.readouterr().out.splitlines()
    assert len([line for line in out if line.startswith("  conflict: ")]) == 2 and "2 in conflict (the target's kept)" in out[-1]
    assert main(["zoo", "import", str(here.root), "--store", str(here.root)]) == 2
    assert "is the target store itself" in capsys.readouterr().err
    assert main(["zoo", "import", str(tmp_path), "--store", str(here.root)]) == 2
    assert "is not a biaslens results store" in capsys.readouterr().err
