"""Typed options (biaslens.engine.options): parsed and validated once, the same values the engine and the CLI use."""

from __future__ import annotations

import argparse
import dataclasses
import json

import pytest

from biaslens.errors import InputError
from biaslens.engine.metrics import COMPAT_MODES, METRICS, PAPER_METRICS, check_compat
from biaslens.engine.models import DTYPES
from biaslens.engine.options import DEFAULT_DEVICE, DEFAULT_DTYPE, SELECTION, Compat, ModelSpec, Precision, RunOptions, run_keywords


def test_compat_is_the_one_list_of_modes():
    assert COMPAT_MODES == ("default", "kaneko2022") == tuple(Compat)
    assert Compat.parse(None) is Compat.parse("") is Compat.DEFAULT
    assert Compat.parse("kaneko2022") is Compat.KANEKO2022 and Compat.parse(Compat.KANEKO2022) is Compat.KANEKO2022
    assert Compat.KANEKO2022.reference_code and not Compat.DEFAULT.reference_code
    assert check_compat("kaneko2022") is True and check_compat(None) is False
    with pytest.raises(InputError, match="Unknown compat mode 'paper': choose from default, kaneko2022"):
        Compat.parse("paper")


def test_compat_reads_like_its_value_everywhere():
    # The result-cache key is a JSON dump of its parts and the manifests are JSON: the enum must not change them.
    assert json.dumps([Compat.KANEKO2022]) == json.dumps(["kaneko2022"])
    assert f"{Compat.DEFAULT}" == "default" and Compat.DEFAULT == "default"
    assert {("sss", "default"): 1}[("sss", Compat.DEFAULT)] == 1


def test_run_options_validate_once():
    run = RunOptions(metrics="AULA, aul,aul", compat="kaneko2022", limit=5)
    assert run.metrics == ("aul", "aula") and run.compat is Compat.KANEKO2022
    assert RunOptions().metrics == PAPER_METRICS and RunOptions(metrics=None).metrics == PAPER_METRICS
    assert run.evaluate_kwargs() == {"compat": "kaneko2022", "limit": 5, "sample": None, "seed": 0, "batch_tokens": None}
    assert RunOptions(chunk_pairs=7).evaluate_kwargs()["chunk_pairs"] == 7
    exact = RunOptions(precision="bf16-rescore")  # type: ignore[arg-type]  # parsed in __post_init__
    assert exact.precision is Precision.BF16_RESCORE and exact.evaluate_kwargs()["precision"] == "bf16-rescore"
    assert "precision" not in RunOptions().evaluate_kwargs() and RunOptions().precision is Precision.MODEL
    assert RunOptions.from_args(argparse.Namespace(precision="bf16-rescore")).precision is Precision.BF16_RESCORE
    with pytest.raises(InputError, match="Unknown precision 'fp8': choose from model, bf16-rescore"):
        RunOptions(precision="fp8")  # type: ignore[arg-type]
    with pytest.raises(dataclasses.FrozenInstanceError):
        run.limit = 3  # type: ignore[misc]
    with pytest.raises(InputError, match="Unknown metric foo"):
        RunOptions(metrics="foo")
    with pytest.raises(InputError, match="No metric given"):
        RunOptions(metrics="")
    with pytest.raises(InputError, match="limit must be a whole number of at least 1, not 0"):
        RunOptions(limit=0)
    with pytest.raises(InputError, match="seed must be a whole number of at least 0"):
        RunOptions(seed=-1)
    with pytest.raises(InputError, match="batch_tokens"):
        RunOptions(batch_tokens=True)  # type: ignore[arg-type]


def test_run_options_from_a_namespace_take_defaults_for_what_a_command_lacks():
    run = RunOptions.from_args(argparse.Namespace(metrics=",".join(METRICS), compat="default", sample=4, seed=3))
    assert run.metrics == tuple(METRICS) and run.sample == 4 and run.seed == 3 and run.limit is None and run.chunk_pairs is None
    assert RunOptions.from_args(argparse.Namespace()) == RunOptions()


def test_run_keywords_pick_what_was_given_and_refuse_unknown_keywords():
    run = {"limit": 3, "seed": 0, "cache": None}
    assert run_keywords("f", run, *SELECTION) == {"limit": 3, "seed": 0}
    assert run_keywords("f", run, "cache", "progress") == {"cache": None}
    with pytest.raises(TypeError, match=r"^token_ranks\(\) got an unexpected keyword argument 'limt'$"):
        run_keywords("token_ranks", {"limt": 3}, *SELECTION)


def test_model_spec():
    spec = ModelSpec.from_args(
        argparse.Namespace(model="some/folder", revision=None, device="cpu", dtype="float32", device_map=None, allow_pickle=False)
    )
    assert spec == ModelSpec("some/folder", device="cpu")
    assert ModelSpec("m").device == DEFAULT_DEVICE == "auto" and ModelSpec("m").dtype == DEFAULT_DTYPE == "float32"
    several = argparse.Namespace(model=["a", "b"])
    assert ModelSpec.from_args(several).model == "a" and ModelSpec.from_args(several, model="b").model == "b"
    assert ModelSpec.from_args(argparse.Namespace(model=None)).model == "bert-base-cased"
    assert spec.with_model("x").model == "x" and spec.with_model("x").device == "cpu"
    assert spec.load_kwargs() == {"device": "cpu", "dtype": "float32", "revision": None, "allow_pickle": False, "device_map": None}
    assert set(DTYPES) == {"float32", "bfloat16", "float16"}
    with pytest.raises(InputError, match="Unknown dtype 'float8'"):
        ModelSpec("m", dtype="float8")
    with pytest.raises(InputError, match="device map"):
        ModelSpec("m", device_map="balanced")
    with pytest.raises(InputError, match="No model given"):
        ModelSpec(" ")


def test_cli_choices_come_from_the_engine():
    from biaslens.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for command in ("evaluate", "inspect", "report", "compare"):
        actions = {a.dest: a for a in sub.choices[command]._actions}
        assert tuple(actions["compat"].choices) == COMPAT_MODES and actions["compat"].default == Compat.DEFAULT
        assert tuple(actions["dtype"].choices) == tuple(DTYPES) and actions["dtype"].default == DEFAULT_DTYPE
        assert actions["device"].default == DEFAULT_DEVICE


def test_report_options_take_the_run_options():
    from biaslens.report.reproduction import ReportOptions

    run = RunOptions(metrics="aul,cps", compat="kaneko2022", sample=9, seed=2, batch_tokens=64)
    options = ReportOptions.from_run(run, ("scores",), shuffle_seed=4)
    assert options == ReportOptions(("scores",), ("aul", "cps"), "kaneko2022", None, 9, 2, 4, 64)
    assert options.compat is Compat.KANEKO2022 and options.positions == "kaneko2022"
    with pytest.raises(InputError, match="Unknown compat mode"):
        ReportOptions(compat="nope")


def test_no_engine_module_imports_the_cli():
    import ast
    from pathlib import Path

    import biaslens

    root = Path(biaslens.__file__).parent
    offenders = []
    for path in root.glob("*.py"):
        if path.name == "__main__.py":  # `python -m biaslens` is the command line's entry point
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "cli" and node.level == 1:
                offenders.append(path.name)
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("biaslens.cli"):
                offenders.append(path.name)
    assert offenders == [], offenders
    assert not (root / "cli.py").exists() and not (root / "cli_field.py").exists()
