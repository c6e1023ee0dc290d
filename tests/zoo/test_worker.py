"""One model's job, run in this process: cells scored once, skipped after, held by others left alone, a model that cannot
load recorded, a metric it cannot give recorded, and a killed job's retry losing only its unfinished chunk."""

from __future__ import annotations

import shutil

import pytest

from biaslens.zoo.cells import load_datasets, planned_cells
from biaslens.zoo.plan import load_plan
from biaslens.zoo.store import Owner, ResultsStore
from biaslens.zoo.worker import ModelTask, evaluate_options, run_model


def _task(plan, index: int, run_id: str = "run-1", attempt: int = 1) -> ModelTask:
    ResultsStore(plan.store, create=True)
    return ModelTask(str(plan.store), run_id, plan.models[index], plan.data_dir, plan.download, attempt)


def test_a_model_is_scored_once(write_plan, model_dirs):
    plan = load_plan(write_plan([{"id": str(model_dirs["bert-cased"])}], extra='metrics = ["aul", "cps"]'))
    first = run_model(_task(plan, 0))
    assert first.state == "finished" and first.count("scored") == 2 * 2 and first.error is None  # 2 datasets x 2 metrics
    keys = {c.key for c in planned_cells(plan.models[0], ResultsStore(plan.store), load_datasets(plan))}
    assert set(first.cells) == keys  # the keys the driver computes before a model loads are the job's
    again = run_model(_task(plan, 0, "run-2"))
    assert again.count("stored") == 4 and again.count("scored") == 0
    store = ResultsStore(plan.store)
    record = store.job("run-1", 0, "worker")
    assert record["state"] == "finished" and record["scored"] == 4 and record["pid"] > 0
    cell = store.read_cell(next(iter(keys)))
    assert cell["status"] == "done" and cell["run"]["run_id"] == "run-1" and cell["model"]["parameters"] > 0
    assert (
        cell["model"]["family"] == "bert"
        and cell["model"]["kind"] == "masked"
        and cell["manifest"]["fingerprint"] == cell["fields"]["model_fingerprint"]
    )
    assert not list((store.root / "locks").glob("*.lock"))  # every lock given back


def test_a_model_that_cannot_load_is_recorded(write_plan, tmp_path, model_dirs):
    broken = tmp_path / "broken"
    broken.mkdir()
    shutil.copy(model_dirs["bert-cased"] / "config.json", broken / "config.json")  # a config and no weights
    plan = load_plan(write_plan([{"id": str(broken), "label": "broken"}]))
    outcome = run_model(_task(plan, 0))
    assert outcome.state == "load-failed" and outcome.cells == {} and "\n" not in outcome.error
    failure = ResultsStore(plan.store).failure(plan.models[0].resolution_key("float32"))
    assert failure["error"] == outcome.error and failure["label"] == "broken"


def test_a_metric_the_model_cannot_give_is_settled_as_unavailable(write_plan, tmp_path):
    from tests.support.fnet import build_fnet

    fnet = build_fnet(tmp_path / "fnet")
    plan = load_plan(write_plan([{"id": str(fnet)}], datasets='["crows-pairs"]', extra='metrics = ["aul", "aula"]'))
    outcome = run_model(_task(plan, 0))
    assert sorted(outcome.cells.values()) == ["scored", "unavailable"]
    (key,) = [k for k, v in outcome.cells.items() if v == "unavailable"]
    cell = ResultsStore(plan.store).read_cell(key)
    assert cell["status"] == "unavailable" and "attention" in cell["reason"] and cell["fields"]["metric"] == "aula"
    assert run_model(_task(plan, 0, "run-2")).count("scored") == 0  # settled: never tried again


def test_cells_another_run_holds_are_left_to_it(write_plan, model_dirs):
    plan = load_plan(write_plan([{"id": str(model_dirs["roberta"])}], datasets='["stereoset"]', extra='metrics = ["aul", "cps"]'))
    store = ResultsStore(plan.store, create=True)
    cells = planned_cells(plan.models[0], store, load_datasets(plan))
    held = next(c for c in cells if c.metric == "cps")
    assert store.try_lock(held.key, Owner.here("other-run", 0, "99"))  # alive: this process
    outcome = run_model(_task(plan, 0))
    assert outcome.cells[held.key] == "held" and outcome.count("scored") == 1 and not store.has_cell(held.key)


class Killed(Exception):
    pass


def test_a_killed_job_loses_only_its_unfinished_chunk(write_plan, model_dirs, many_pairs):
    """Killed within its 4th chunk (of 4 pairs), the job kept 3 chunks in the store's cache: its retry reads those back
    (3 x 4 pairs x 2 metrics) and computes the rest."""
    plan = load_plan(
        write_plan([{"id": str(model_dirs["bert-cased"])}], datasets=f'["{many_pairs}"]', extra='metrics = ["aul", "cps"]\nchunk_pairs = 4')
    )

    def kill_in_chunk_four(unit: str, done: float, total: int) -> None:
        if 12 < done < 16:
            raise Killed

    with pytest.raises(Killed):
        run_model(_task(plan, 0), progress=kill_in_chunk_four)
    store = ResultsStore(plan.store)
    assert not list((store.root / "locks").glob("*.lock")) and store.summaries().empty
    retry = run_model(_task(plan, 0, attempt=2))
    assert retry.cached == 3 * 4 * 2 and retry.count("scored") == 2


def test_evaluate_options_pass_a_convention_only_when_it_is_not_the_default(tmp_path, monkeypatch):
    from biaslens.zoo import plan as zoo_plan
    from biaslens.zoo.plan import parse_plan

    monkeypatch.setattr(zoo_plan, "CONVENTIONS", ("default", "lm-eval"))
    plan = parse_plan(
        {
            "datasets": [{"name": "cp", "sample": 5, "seed": 3}],
            "conventions": ["default", "lm-eval"],
            "precision": ["float32", "bf16-rescore"],
            "models": [{"id": "x", "chunk_pairs": 8}],
        },
        tmp_path,
    )
    model = plan.models[0]
    options = {(u.convention, u.precision): evaluate_options(model, u) for u in model.units()}
    base = {"compat": "default", "limit": None, "sample": 5, "seed": 3, "chunk_pairs": 8}
    assert options[("default", "float32")] == base
    assert options[("lm-eval", "float32")] == {**base, "convention": "lm-eval"}
    assert options[("default", "bf16-rescore")] == {**base, "precision": "bf16-rescore"}


def test_a_causal_model_gets_its_own_metrics_and_the_peers_conventions(write_plan, model_dirs, causal_dirs):
    """A zoo of both kinds: the causal model is scored with its own metrics under each convention, the masked one under
    the default, and its cells under a causal convention are settled as not applicable (never tried again)."""
    from biaslens.engine.metrics import CAUSAL_METRICS, default_metrics

    models = [{"id": str(causal_dirs["gpt2"]), "kind": "causal"}, {"id": str(model_dirs["bert-cased"])}]
    plan = load_plan(write_plan(models, datasets='["crows-pairs"]', extra='conventions = ["default", "lm-eval"]'))
    causal = run_model(_task(plan, 0))
    assert causal.state == "finished" and causal.count("scored") == 2 * len(CAUSAL_METRICS)  # 2 conventions
    keys = {c.key for c in planned_cells(plan.models[0], ResultsStore(plan.store), load_datasets(plan))}
    assert set(causal.cells) == keys  # planned with the causal metrics: the plan names its kind
    masked = run_model(_task(plan, 1))
    assert masked.count("scored") == masked.count("unavailable") == len(default_metrics("masked"))
    store = ResultsStore(plan.store)
    reasons = {store.read_cell(k)["reason"] for k, v in masked.cells.items() if v == "unavailable"}
    assert reasons == {"the lm-eval convention scores causal language models"}
    assert run_model(_task(plan, 1, "run-2")).count("scored") == 0


@pytest.mark.parametrize("declared", [True, False])
def test_a_causal_model_asked_for_masked_metrics_is_scored_on_their_counterparts(write_plan, causal_dirs, declared):
    """Top-level `aul, cps` and a causal model scored nothing ("done (0 cells scored)") and the leaderboard dropped it:
    each metric is scored as its causal counterpart (AUL-c, CPS-c), said when the plan is checked where the kind is
    declared; one without a counterpart (All Masked) is recorded as unavailable with the reason."""
    model = {"id": str(causal_dirs["gpt2"]), "label": "gpt2"} | ({"kind": "causal"} if declared else {})
    plan = load_plan(write_plan([model], datasets='["crows-pairs"]', extra='metrics = ["aul", "cps", "all_masked"]'))
    expected_note = "models[0] (gpt2) is a causal model: scored as AUL-c (for AUL), CPS-c (for CPS); All Masked recorded as unavailable"
    assert [n.startswith(expected_note) for n in plan.notes] == ([True] if declared else [])
    outcome = run_model(_task(plan, 0))
    store = ResultsStore(plan.store)
    fates = {store.read_cell(k)["fields"]["metric"]: v for k, v in outcome.cells.items()}
    assert fates == {"aul_c": "scored", "cps_c": "scored", "all_masked": "unavailable"}
    keys = {c.key for c in planned_cells(plan.models[0], store, load_datasets(plan))}
    assert set(outcome.cells) == keys  # the driver plans the same cells (the kind declared, or recorded when it loaded)


def test_each_cell_keeps_the_model_s_sanity_verdict(write_plan, model_dirs, tiny_models):
    """As `biaslens.evaluate` computes it (`model_verdict`): the suite's tiny models have random weights."""
    from dataclasses import asdict

    from biaslens.analyses.sanity import model_verdict

    plan = load_plan(write_plan([{"id": str(model_dirs["roberta"])}], datasets='["stereoset"]', extra='metrics = ["aul", "cps"]'))
    outcome = run_model(_task(plan, 0))
    store = ResultsStore(plan.store)
    expected = asdict(model_verdict(tiny_models["roberta"]))
    for key in outcome.cells:
        assert store.read_cell(key)["model"]["sanity"] == pytest.approx(expected)
    assert expected["status"] == "untrained"
    assert set(store.summaries()["sanity"]) == {"untrained"} and store.summaries()["sanity_message"].str.startswith("Looks untrained").all()


@pytest.mark.parametrize("damage", ["json", "parquet"])
def test_a_damaged_cell_is_set_aside_and_scored_again(write_plan, model_dirs, damage, capsys):
    """A cell cut off (its JSON or its records) is not held: status says so, the next run moves its files to damaged/
    (with why) and scores it again."""
    from biaslens.cli.main import main
    from biaslens.zoo.status import plan_status

    plan = load_plan(write_plan([{"id": str(model_dirs["bert-cased"])}], datasets='["crows-pairs"]', extra='metrics = ["aul", "cps"]'))
    first = run_model(_task(plan, 0))
    store = ResultsStore(plan.store)
    key = next(iter(first.cells))
    path = store.root / "cells" / key[:2] / f"{key}.{damage}"
    whole = path.read_bytes()
    path.write_bytes(whole[: len(whole) // 3])
    assert not store.has_cell(key)
    row = plan_status(plan).frame.iloc[0]
    assert row["state"] != "done" and row["damaged"] == 1 and row["missing"] == 1 and row["done"] == 1
    assert main(["zoo", "status", str(plan.path)]) == 0
    assert "1 damaged (left out: `zoo run` scores it again)" in capsys.readouterr().out
    again = run_model(_task(plan, 0, "run-2"))
    assert again.cells[key] == "scored" and again.count("stored") == 1
    assert store.has_cell(key) and plan_status(plan).frame.iloc[0]["state"] == "done"
    aside = sorted(p.name for p in (store.root / "damaged").iterdir())
    assert len(aside) == 3 and all(name.startswith(key) for name in aside)  # the old .json, .parquet and why
    (note,) = [p for p in (store.root / "damaged").iterdir() if p.suffix == ".txt"]
    assert ("not whole JSON" if damage == "json" else "records (.parquet) cannot be read") in note.read_text()
    assert next(p for p in (store.root / "damaged").iterdir() if p.suffix == f".{damage}").read_bytes() == whole[: len(whole) // 3]
