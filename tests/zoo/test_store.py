"""The results store: keys made of content, cells written whole and read back as `evaluate` made them, the index, locks."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time

import pandas as pd
import pytest

from biaslens.zoo import store as zoo_store
from biaslens.zoo.store import Owner, ResultsStore, StoreError, cell_fields, cell_key, unit_key
from tests.support.zoo import made_up


def _fields(**changes):
    base = dict(
        fingerprint="sha256:abc",
        revision=None,
        dataset_sha256="d" * 64,
        selection=None,
        metric="aul",
        convention="default",
        precision="float32",
        compat="default",
    )
    return cell_fields(**{**base, **changes})


def test_a_cell_key_changes_with_every_fact_it_is_made_of():
    first = cell_key(_fields())
    assert cell_key(_fields()) == first and len(first) == 64
    changes = [
        {"fingerprint": "sha256:abd"},
        {"revision": "main"},
        {"dataset_sha256": "e" * 64},
        {"selection": {"limit": 5}},
        {"metric": "cps"},
        {"convention": "lm-eval"},
        {"precision": "bfloat16"},
        {"compat": "kaneko2022"},
        {"version": "0.2.0"},
    ]
    keys = {cell_key(_fields(**c)) for c in changes}
    assert first not in keys and len(keys) == len(changes)
    assert unit_key(_fields()) == unit_key(_fields(metric="cps")) != unit_key(_fields(precision="bfloat16"))


def test_a_folder_that_is_not_a_store(tmp_path):
    with pytest.raises(StoreError, match="is not a biaslens results store"):
        ResultsStore(tmp_path)
    (tmp_path / "other.txt").write_text("x")
    with pytest.raises(StoreError, match="with other files in it"):
        ResultsStore(tmp_path, create=True)
    (tmp_path / "new").mkdir()
    store = ResultsStore(tmp_path / "new", create=True)
    assert json.loads((store.root / "store.json").read_text())["format"] == zoo_store.STORE_FORMAT
    assert ResultsStore(tmp_path / "new").root == store.root  # opened again
    (tmp_path / "newer").mkdir()
    (tmp_path / "newer" / "store.json").write_text(json.dumps({"format": 99}))
    with pytest.raises(StoreError, match="newer layout"):
        ResultsStore(tmp_path / "newer")


@pytest.fixture(scope="module")
def crows():
    """The fixture CrowS-Pairs file: 16 pairs, 4 of them gender (pairs 0, 4, 10, 15)."""
    from biaslens.data.datasets import load_dataset
    from tests.support import FIXTURE_DATA

    return load_dataset("crows-pairs", data_dir=FIXTURE_DATA, download=False)


def test_the_index_follows_the_cells(tmp_path, crows):
    from biaslens.zoo.testing import synthetic_about, synthetic_cell

    store = ResultsStore(tmp_path / "s", create=True)
    assert store.summaries().empty and list(store.summaries().columns) == list(zoo_store.SUMMARY_COLUMNS)
    store.put_dataset(crows)
    about = synthetic_about(1, "bert", 1000)
    a = synthetic_cell(store, crows, about, "aul", made_up(crows, 10))
    first = store.summaries()
    assert list(first["bias_score"]) == [62.5] and list(first["n"]) == [16] and list(first["status"]) == ["done"]
    b = synthetic_cell(store, crows, about, "cps", made_up(crows, 3))
    assert sorted(store.summaries()["bias_score"]) == [18.75, 62.5]  # rebuilt: the listing changed
    types = store.type_summaries()
    gender = types[types["bias_type"] == "gender"].set_index("key")
    assert gender.loc[a, "bias_score"] == 50.0 and gender.loc[b, "bias_score"] == 25.0  # a: pairs 0 and 4 of 0, 4, 10, 15; b: pair 0
    assert set(types["key"]) == {a, b} and int(gender.loc[a, "n"]) == 4
    assert len(list((store.root / "index").glob("summaries-*.parquet"))) >= 1
    zoo_store._MEMO.clear()  # a fresh process: read from the index file, not rebuilt from the cells
    (store.root / "cells").rename(store.root / "cells-away")
    assert store.summaries().empty  # (no cells: another listing)
    (store.root / "cells-away").rename(store.root / "cells")
    assert sorted(store.summaries()["bias_score"]) == [18.75, 62.5]
    with pytest.raises(ValueError):
        store.write_cell({**store.read_cell(a), "key": "0" * 64})


def test_a_cell_of_a_metric_whose_meaning_changed_gets_a_new_key_and_the_old_one_is_outdated(tmp_path, crows):
    """AULA-c's weights average over the rows that can see a token since its cache tag aula_c@visible-rows: its cells name
    the tag (new keys, the same unit as the other metrics), and a cell written before (no tag) is shown as outdated, never
    as a score; the other metrics' keys, SSS's included, are what stores began with."""
    from biaslens.zoo.testing import synthetic_about, synthetic_cell

    aula_c = _fields(metric="aula_c")
    assert aula_c["metric_tag"] == "aula_c@visible-rows" and unit_key(aula_c) == unit_key(_fields(metric="ll"))
    assert all("metric_tag" not in _fields(metric=m, compat=c) for m in ("aul", "sss", "ll") for c in ("default", "kaneko2022"))
    about = synthetic_about(1, "gpt2", 1000)
    scratch = ResultsStore(tmp_path / "scratch", create=True)
    scratch.put_dataset(crows)
    new = scratch.read_cell(synthetic_cell(scratch, crows, about, "aula_c", made_up(crows, 12)))
    assert new["fields"]["metric_tag"] == "aula_c@visible-rows"
    older = {k: v for k, v in new["fields"].items() if k != "metric_tag"}  # as written before the change
    assert cell_key(older) != new["key"]
    store = ResultsStore(tmp_path / "s", create=True)
    store.put_dataset(crows)
    store.write_cell({**new, "key": cell_key(older), "fields": older}, made_up(crows, 12))
    synthetic_cell(store, crows, about, "sss", made_up(crows, 4))
    rows = store.summaries().set_index("metric")
    assert rows.loc["aula_c", "status"] == "outdated" and "aula_c@visible-rows" in rows.loc["aula_c", "reason"]
    assert rows.loc["sss", "status"] == "done"
    synthetic_cell(store, crows, about, "aula_c", made_up(crows, 12))
    assert sorted(store.summaries().query("status == 'done'")["bias_score"]) == [25.0, 75.0]


def test_a_stored_result_is_the_evaluate_result(tmp_path, tiny_bert):
    """Records and summary written by the worker's path, read back as an EvaluationResult: evaluate's pairs and summary."""
    from biaslens import evaluate, load_dataset
    from biaslens.zoo.plan import parse_plan
    from biaslens.zoo.worker import ModelTask, run_model
    from tests.support import FIXTURE_DATA

    plan = parse_plan(
        {
            "datasets": ["crows-pairs"],
            "data_dir": str(FIXTURE_DATA),
            "download": False,
            "metrics": ["aul", "cps"],
            "models": [{"id": tiny_bert.name}],
        },
        tmp_path,
    )
    ResultsStore(plan.store, create=True)
    outcome = run_model(ModelTask(str(plan.store), "run", plan.models[0], plan.data_dir, False))
    assert outcome.count("scored") == 2
    store = ResultsStore(plan.store)
    unit = store.summaries()["unit"].iloc[0]
    stored = store.result(unit)
    expected = evaluate(tiny_bert, load_dataset("crows-pairs", data_dir=FIXTURE_DATA, download=False), ["aul", "cps"])
    pd.testing.assert_frame_equal(stored.pairs, expected.pairs, check_exact=False, atol=1e-5)
    for metric in ("aul", "cps"):
        got, want = stored.summary["metrics"][metric], expected.summary["metrics"][metric]
        assert {k: got[k] for k in ("bias_score", "n", "wins", "ci_low", "ci_high")} == {
            k: want[k] for k in ("bias_score", "n", "wins", "ci_low", "ci_high")
        }
        assert got["by_bias_type"].keys() == want["by_bias_type"].keys()
    assert stored.manifest["fingerprint"] == tiny_bert.fingerprint and stored.manifest["store"]["unit"] == unit
    assert list(store.result(unit, ["cps"]).summary["metrics"]) == ["cps"]
    with pytest.raises(StoreError, match="holds no aula"):
        store.result(unit, ["aula"])


def test_a_lock_is_held_by_one_owner(tmp_path):
    store = ResultsStore(tmp_path / "s", create=True)
    first, other = Owner.here("run-a", 0, "1"), Owner.here("run-b", 0, "2")
    assert store.try_lock("k" * 64, first)
    assert not store.try_lock("k" * 64, other)  # another run's job: refused while the holder is alive
    info = store.lock_info("k" * 64)
    assert info is not None and info.owner.run_id == "run-a" and not info.stale
    assert store.live_locks(["k" * 64, "j" * 64]).keys() == {"k" * 64}
    store.release("k" * 64, other)  # not its lock: left alone
    assert store.lock_info("k" * 64) is not None
    store.release("k" * 64, first)
    assert store.lock_info("k" * 64) is None and store.try_lock("k" * 64, other)


def test_a_retry_of_the_same_job_takes_its_lock_over(tmp_path):
    store = ResultsStore(tmp_path / "s", create=True)
    killed = Owner("run-a", 3, "7_3", 1, "elsewhere", 123)
    assert store.try_lock("k" * 64, killed)
    assert not store.try_lock("k" * 64, Owner("run-a", 4, "7_4", 1, "elsewhere", 124))  # another model of the run
    assert store.try_lock("k" * 64, Owner("run-a", 3, "8", 2, "elsewhere", 125))  # its retry (attempt 2)
    assert store.lock_info("k" * 64).owner.attempt == 2


def test_a_lock_goes_stale_when_its_holder_dies_or_stops_beating(tmp_path, monkeypatch):
    store = ResultsStore(tmp_path / "s", create=True)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True).stdout.strip()
    assert store.try_lock("a" * 64, Owner("run-a", 0, "1", 1, socket.gethostname(), int(dead)))
    assert store.lock_info("a" * 64).stale  # its process is gone (this host)
    assert store.try_lock("a" * 64, Owner.here("run-b", 0, "2"))
    assert store.try_lock("b" * 64, Owner("run-a", 0, "1", 1, "another-host", 1))
    assert not store.lock_info("b" * 64).stale
    old = time.time() - zoo_store.LOCK_TTL_S - 5
    os.utime(store.root / "locks" / f"{'b' * 64}.lock", (old, old))
    assert store.lock_info("b" * 64).stale  # no heartbeat for longer than the TTL
    store.refresh(["b" * 64])
    assert not store.lock_info("b" * 64).stale  # a heartbeat
    os.utime(store.root / "locks" / f"{'b' * 64}.lock", (old, old))
    assert store.try_lock("b" * 64, Owner.here("run-b", 0, "2"))


def test_locks_taken_at_once_by_many_processes_go_to_one(tmp_path):
    """Eight processes race for the same ten cells: each cell ends up with exactly one winner. Each stays alive until
    every one has tried: a lock whose holder has exited is stale by design (on a busy machine the processes could
    otherwise run one after another, each taking over the locks of the one before)."""
    store = ResultsStore(tmp_path / "s", create=True)
    code = (
        "import sys, json; from biaslens.zoo.store import ResultsStore, Owner\n"
        "s = ResultsStore(sys.argv[1]); o = Owner.here('run-' + sys.argv[2], 0, sys.argv[2])\n"
        "print(json.dumps([k for k in [str(i) * 64 for i in range(10)] if s.try_lock(k, o)]), flush=True)\n"
        "sys.stdin.read()  # hold the locks until the test lets go\n"
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", code, str(store.root), str(i)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        for i in range(8)
    ]
    won = [json.loads(p.stdout.readline()) for p in procs if p.stdout is not None]
    for p in procs:
        p.communicate(timeout=120)  # closes its stdin: it exits
    flat = [k for keys in won for k in keys]
    assert sorted(flat) == sorted(str(i) * 64 for i in range(10))  # every cell once: never two holders


def test_job_records_and_runs(tmp_path):
    store = ResultsStore(tmp_path / "s", create=True)
    run = store.new_run({"plan": "p.toml", "models": []})
    store.write_job(run, 2, {"state": "submitted", "job_id": "5_2"}, side="driver")
    assert store.job(run, 2, "driver")["job_id"] == "5_2" and store.job(run, 2, "worker") is None
    assert [r["run_id"] for r in store.runs()] == [run]
    store.put_failure("abc", {"error": "no weights"})
    assert store.failure("abc")["error"] == "no weights"
    store.clear_failure("abc")
    assert store.failure("abc") is None
