"""Issue 17 (hardening II): one-line failures before the work, numerical health, token-identical pairs, output files."""

from __future__ import annotations

import errno
import json
import os
import shutil
import stat
from pathlib import Path

import numpy as np
import pytest

from biaslens import export
from biaslens.cli import main
from biaslens.datasets import Pair, read_custom_pairs, read_pairs_file, read_stereoset
from biaslens.errors import DatasetError, InputError, NumericalError, OutputError
from biaslens.evaluation import evaluate, inspect_pair
from biaslens.export import atomic_write, check_output_dir
from biaslens.models import check_hub_id, load_model

PAIRS_CSV = "sent_more,sent_less,bias_type,stereo_antistereo\n" + "".join(
    f"Sentence {i} is about women.,Sentence {i} is about men.,gender,stereo\n" for i in range(4)
)


def _pairs_file(tmp_path: Path) -> Path:
    path = tmp_path / "pairs.csv"
    path.write_text(PAIRS_CSV, encoding="utf-8")
    return path


def _one_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    assert lines, "no error line"
    assert "Traceback" not in text
    return lines[-1]


# -- --out checked before the work; a failure after it keeps the scores ---------------


def test_output_dir_checks_refuse_files_and_file_parents(tmp_path):
    afile = tmp_path / "a-file"
    afile.write_text("x")
    with pytest.raises(OutputError, match="is a file, not a folder"):
        check_output_dir(afile)
    with pytest.raises(OutputError, match="a-file is a file"):
        check_output_dir(afile / "sub" / "out")
    assert check_output_dir(tmp_path / "new" / "out") == tmp_path / "new" / "out"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file"]  # the probe leaves nothing behind


def test_output_dir_on_a_read_only_filesystem_is_refused():
    if os.access("/sys", os.W_OK) and not Path("/sys").is_dir():
        pytest.skip("no read-only /sys here")
    try:
        os.rmdir(__import__("tempfile").mkdtemp(dir="/sys"))
        pytest.skip("/sys is writable here")
    except OSError:
        pass
    with pytest.raises(OutputError, match="cannot be written"):
        check_output_dir("/sys/biaslens-out")


@pytest.mark.parametrize("where", ["file", "under-file"])
def test_cli_refuses_an_unwritable_out_before_loading_anything(model_dirs, tmp_path, capsys, where):
    afile = tmp_path / "exists"
    afile.write_text("keep me")
    out = afile if where == "file" else afile / "out"
    code = main(
        [
            "evaluate",
            "--model",
            str(model_dirs["bert-cased"]),
            "--dataset",
            str(_pairs_file(tmp_path)),
            "--metrics",
            "aul",
            "--no-cache",
            "--out",
            str(out),
        ]
    )
    err = capsys.readouterr().err
    assert code == 2
    assert "Loading" not in err  # refused before the model was loaded or anything scored
    assert "exists is a file" in _one_line(err)
    assert afile.read_text() == "keep me"


def test_a_write_failure_after_scoring_says_the_scores_are_cached(model_dirs, tmp_path, capsys, monkeypatch):
    argv = [
        "evaluate",
        "--model",
        str(model_dirs["bert-cased"]),
        "--dataset",
        str(_pairs_file(tmp_path)),
        "--metrics",
        "aul",
        "--cache-dir",
        str(tmp_path / "cache"),
        "--out",
        str(tmp_path / "out"),
    ]
    real = export.tempfile.mkstemp

    def disk_full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(export.tempfile, "mkstemp", disk_full)
    code = main(argv)
    line = _one_line(capsys.readouterr().err)
    assert code == 2
    assert "No space left on device" in line and "kept in the result cache" in line
    monkeypatch.setattr(export.tempfile, "mkstemp", real)
    assert main(argv) == 0
    assert "4 of 4 pair scores came from the result cache" in capsys.readouterr().err
    assert (tmp_path / "out" / "pairs.csv").is_file()


@pytest.mark.parametrize("mask", [0o022, 0o027])
def test_output_files_respect_the_umask(tmp_path, mask):
    old = os.umask(mask)
    try:
        path = atomic_write(tmp_path / "f.csv", "a,b\n")
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~mask


# -- datasets: non-text fields, repeated columns ---------------------------------------


def _stereoset_line(**overrides) -> dict:
    item = {
        "type": "intrasentence",
        "target": "nurse",
        "bias_type": "gender",
        "context": "The nurse was BLANK.",
        "stereotype": "The nurse was female.",
        "anti-stereotype": "The nurse was male.",
        "unrelated": "The nurse was blue.",
    }
    return {**item, **overrides}


@pytest.mark.parametrize("field,value,kind", [("bias_type", {"a": 1}, "an object"), ("stereotype", ["x"], "a list"), ("target", 3, "a number")])
def test_stereoset_lines_with_non_text_fields_name_file_row_and_field(tmp_path, field, value, kind):
    path = tmp_path / "test.jsonl"
    path.write_text(json.dumps(_stereoset_line()) + "\n" + json.dumps(_stereoset_line(**{field: value})) + "\n")
    with pytest.raises(DatasetError) as info:
        read_stereoset(path)
    assert str(info.value) == f"{path}, row 2: {field} is {kind}, expected text"


@pytest.mark.parametrize("label", [["stereotype"], {"x": "stereotype"}])
def test_stereoset_dev_json_with_a_list_or_dict_gold_label_is_refused(tmp_path, label):
    sentences = [{"sentence": "The nurse was female.", "gold_label": "stereotype"}, {"sentence": "The nurse was male.", "gold_label": label}]
    doc = {
        "version": "1",
        "data": {
            "intrasentence": [{"id": "e1", "target": "nurse", "bias_type": "gender", "context": "The nurse was BLANK.", "sentences": sentences}]
        },
    }
    path = tmp_path / "dev.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(DatasetError, match=r"dev.json, row 1: .*gold_label that is a"):
        read_stereoset(path)


def test_repeated_header_columns_are_an_error_naming_them(tmp_path):
    path = tmp_path / "pairs.csv"
    path.write_text("sent_more,sent_less,bias_type,sent_more\nA women.,A men.,gender,A man.\n")
    with pytest.raises(DatasetError, match="repeats column.s. sent_more"):
        read_custom_pairs(path)
    with pytest.raises(DatasetError, match="repeats column"):
        read_pairs_file(path)


# -- hub ids ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name,rule",
    [
        ("org/na me", "contains a space"),
        ("org/a--b", "'--'"),
        ("-org/x", "start or end"),
        ("org/" + "x" * 97, "at most 96"),
        ("a/b/", "not a hub id"),
        ("org/x.git", ".git"),
    ],
)
def test_invalid_hub_ids_name_the_rule_they_break(name, rule):
    with pytest.raises(InputError, match="not a hub id") as info:
        check_hub_id(name)
    assert rule in str(info.value)


def test_cli_inspect_with_an_invalid_hub_id_is_one_line(capsys):
    assert main(["inspect", "--model", "org/na me", "A women.", "A men."]) == 2
    line = _one_line(capsys.readouterr().err)
    assert "'org/na me' is not a hub id: it contains a space" in line


@pytest.mark.parametrize("name", ["bert-base-cased", "google-bert/bert-base-uncased", "FacebookAI/xlm-roberta-large", "a_b.c"])
def test_valid_hub_ids_pass(name):
    check_hub_id(name)


# -- Python API misuse --------------------------------------------------------------------


def test_api_misuse_is_an_input_error(tiny_bert):
    pairs = [Pair(0, "custom", "x", "stereo", "A women.", "A men.")]
    with pytest.raises(InputError, match="sent_stereo must be a sentence"):
        inspect_pair(tiny_bert, None, "A men.")
    with pytest.raises(InputError, match="sent_anti must be a sentence"):
        inspect_pair(tiny_bert, "A women.", 3)
    with pytest.raises(InputError, match="top_k"):
        inspect_pair(tiny_bert, "A women.", "A men.", top_k=-1)
    with pytest.raises(InputError, match="metrics must be"):
        inspect_pair(tiny_bert, "A women.", "A men.", metrics=7)
    for kwargs, fragment in [
        ({"chunk_pairs": 0}, "chunk_pairs"),
        ({"chunk_pairs": 2.5}, "chunk_pairs"),
        ({"batch_tokens": -1}, "batch_tokens"),
        ({"limit": "3"}, "limit"),
        ({"seed": None}, "seed"),
    ]:
        with pytest.raises(InputError, match=fragment):
            evaluate(tiny_bert, pairs, "aul", **kwargs)
    with pytest.raises(InputError, match="PairDataset"):
        evaluate(tiny_bert, "crows-pairs", "aul")
    with pytest.raises(InputError, match="Pair objects"):
        evaluate(tiny_bert, [("A women.", "A men.")], "aul")


def test_token_identical_sentences_are_refused_by_the_inspector(tiny_bert):
    with pytest.raises(InputError, match="encode to the same tokens"):
        inspect_pair(tiny_bert, "\u2603\u2603\u2603", "\u2602\u2602\u2602")
    with pytest.raises(InputError, match="encode to the same tokens"):
        inspect_pair(tiny_bert, "The cat sat.", "The cat sat .")


def test_cli_reports_token_identical_pairs_and_leaves_them_out(model_dirs, tmp_path, capsys):
    path = tmp_path / "pairs.csv"
    path.write_text(PAIRS_CSV + "\u2603\u2603\u2603,\u2602\u2602\u2602,gender,stereo\n", encoding="utf-8")
    assert (
        main(
            [
                "evaluate",
                "--model",
                str(model_dirs["bert-cased"]),
                "--dataset",
                str(path),
                "--metrics",
                "aul",
                "--no-cache",
                "--out",
                str(tmp_path / "out"),
            ]
        )
        == 0
    )
    captured = capsys.readouterr()
    assert "1 pair left out of N" in captured.err and "pair id 4" in captured.err
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["token_identical"] == {"count": 1, "pair_ids": [4]}
    assert summary["metrics"]["aul"]["n"] == 4


# -- numerical health ----------------------------------------------------------------------


def _broken_copy(model_dirs, tmp_path, value: float) -> Path:
    from safetensors.torch import load_file, save_file

    folder = tmp_path / "broken"
    shutil.copytree(model_dirs["bert-cased"], folder)
    weights = load_file(folder / "model.safetensors")
    name = next(k for k in sorted(weights) if k.endswith("attention.self.query.weight"))
    weights[name][0, 0] = value
    save_file(weights, folder / "model.safetensors", metadata={"format": "pt"})
    return folder


@pytest.mark.parametrize("value", [float("nan"), float("inf")])
def test_a_model_with_non_finite_weights_is_refused_at_load(model_dirs, tmp_path, value):
    with pytest.raises(NumericalError, match="not finite numbers .NaN or infinity., e.g. in .*query.weight"):
        load_model(str(_broken_copy(model_dirs, tmp_path, value)))


def test_non_finite_outputs_are_an_error_not_accuracy_100(model_dirs):
    import torch

    from biaslens.sanity import check_model

    lm = load_model(str(model_dirs["bert-cased"]))
    with torch.no_grad():
        lm.model.get_input_embeddings().weight.fill_(float("nan"))  # broken after the load check, e.g. by an overflow
    with pytest.raises(NumericalError, match="not finite numbers"):
        check_model(lm)
    with pytest.raises(NumericalError, match="nothing was scored"):
        evaluate(lm, [Pair(0, "custom", "x", "stereo", "A women.", "A men.")], "aul,cps")


def test_finite_models_still_score(tiny_bert):
    result = evaluate(tiny_bert, [Pair(0, "custom", "x", "stereo", "A women.", "A men.")], "aul,cps")
    assert np.isfinite(result.pairs[["aul_stereo", "aul_anti", "cps_stereo", "cps_anti"]].to_numpy()).all()
