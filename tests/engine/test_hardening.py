"""Hardening: one-line failures before the work, numerical health, token-identical pairs, output files (issue 17);
nothing escapes an allowed folder, limits before reading, control characters, no noise (issue 22, at the end)."""

from __future__ import annotations

import errno
import io
import json
import os
import shutil
import stat
from pathlib import Path

import numpy as np
import pytest

from biaslens.data import export
from biaslens.cli import main
from biaslens.data.datasets import Pair, read_custom_pairs, read_pairs_file, read_stereoset
from biaslens.errors import DatasetError, InputError, NumericalError, OutputError
from biaslens.engine.evaluation import evaluate, inspect_pair
from biaslens.data.export import atomic_write, check_output_dir
from biaslens.engine.models import check_hub_id, load_model
from tests.support import STEREOSET_NURSE

PAIRS_CSV = "sent_more,sent_less,bias_type,stereo_antistereo\n" + "".join(
    f"Sentence {i} is about women.,Sentence {i} is about men.,gender,stereo\n" for i in range(4)
)


def _pairs_file(tmp_path: Path) -> Path:
    path = tmp_path / "pairs.csv"
    path.write_text(PAIRS_CSV, encoding="utf-8")
    return path


def _evaluate_argv(model_dirs, dataset: Path, *options: str) -> list[str]:
    """`biaslens evaluate` of the bert-cased fixture model on `dataset`, AUL only, with `options`."""
    return ["evaluate", "--model", str(model_dirs["bert-cased"]), "--dataset", str(dataset), "--metrics", "aul", *options]


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
    code = main(_evaluate_argv(model_dirs, _pairs_file(tmp_path), "--no-cache", "--out", str(out)))
    err = capsys.readouterr().err
    assert code == 2
    assert "Loading" not in err  # refused before the model was loaded or anything scored
    assert "exists is a file" in _one_line(err)
    assert afile.read_text() == "keep me"


def test_a_write_failure_after_scoring_says_the_scores_are_cached(model_dirs, tmp_path, capsys, monkeypatch):
    argv = _evaluate_argv(model_dirs, _pairs_file(tmp_path), "--cache-dir", str(tmp_path / "cache"), "--out", str(tmp_path / "out"))
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
    assert "4 of 4 scores (4 pairs × 1 metric) came from the result cache" in capsys.readouterr().err
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
    return {**STEREOSET_NURSE, **overrides}


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


@pytest.mark.parametrize(("read", "says"), [(read_custom_pairs, "repeats column.s. sent_more"), (read_pairs_file, "repeats column")])
def test_repeated_header_columns_are_an_error_naming_them(tmp_path, read, says):
    path = tmp_path / "pairs.csv"
    path.write_text("sent_more,sent_less,bias_type,sent_more\nA women.,A men.,gender,A man.\n")
    with pytest.raises(DatasetError, match=says):
        read(path)


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
    assert main(_evaluate_argv(model_dirs, path, "--no-cache", "--out", str(tmp_path / "out"))) == 0
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

    from biaslens.analyses.sanity import check_model

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


# =========================================================================================
# Issue 22 (hardening III): nothing escapes an allowed folder, bad input fails in one line
# before the model loads, limits before reading, no noise
# =========================================================================================

SECRET = "The outside file's secret sentence"


@pytest.fixture
def no_model_load(monkeypatch):
    """Fail the test if a model is loaded (an argument must be refused before)."""
    import biaslens.engine.models

    def refuse(*args, **kwargs):
        pytest.fail("the model was loaded before the arguments were checked")

    monkeypatch.setattr(biaslens.engine.models, "load_model", refuse)


def _outside_crows_pairs(tmp_path: Path) -> Path:
    """A valid CrowS-Pairs file outside every allowed folder, whose sentences must never be shown."""
    path = tmp_path / "outside" / "crows.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        f"sent_more,sent_less,stereo_antistereo,bias_type,annotations\n{SECRET} she.,{SECRET} he.,stereo,gender,\"[['gender']]\"\n",
        encoding="utf-8",
    )
    return path


def _server(tmp_path: Path, **settings):
    from biaslens.serving.server import ServerSettings

    return ServerSettings(data_dirs=(tmp_path / "allowed",), model_dirs=(tmp_path / "allowed",), **settings)


# -- 1. links inside an allowed folder do not lead out of it ----------------------------------


def test_a_dataset_found_through_a_link_out_of_the_allowed_folders_is_refused_unread(tmp_path):
    from biaslens.data.datasets import load_dataset
    from biaslens.errors import DataNotAllowedError

    outside = _outside_crows_pairs(tmp_path)
    sub = tmp_path / "allowed" / "sub"
    sub.mkdir(parents=True)
    (sub / "crows_pairs_anonymized.csv").symlink_to(outside)
    (sub / "mine.csv").symlink_to(outside)
    with _server(tmp_path).in_effect():
        for name, data_dir in (("crows-pairs", str(sub)), (str(sub / "mine.csv"), None)):
            with pytest.raises(DataNotAllowedError) as info:
                load_dataset(name, data_dir=data_dir, download=False)
            message = str(info.value)
            assert "outside the folders this server may read datasets from (a link leads out of them)" in message
            assert SECRET not in message and "\n" not in message
    assert load_dataset("crows-pairs", data_dir=str(sub), download=False).pairs[0].sent_stereo.startswith(SECRET)  # the CLI: no server


def test_links_that_stay_inside_the_allowed_folders_are_followed(tmp_path):
    from biaslens.data.datasets import load_dataset

    real = _outside_crows_pairs(tmp_path / "allowed")
    sub = tmp_path / "allowed" / "sub"
    sub.mkdir(parents=True)
    (sub / "crows_pairs_anonymized.csv").symlink_to(real)  # like the Hugging Face cache's snapshots -> blobs
    with _server(tmp_path).in_effect():
        assert len(load_dataset("crows-pairs", data_dir=str(sub), download=False)) == 1


def test_weat_flag_and_attribute_lists_through_a_link_out_are_refused(tmp_path):
    from biaslens.errors import DataNotAllowedError
    from biaslens.data.flags import load_flag_list
    from biaslens.kurita import read_word_list
    from biaslens.data.weat import load_weat
    from tests.support import FIXTURE_DATA

    allowed = tmp_path / "allowed"
    allowed.mkdir()
    outside = shutil.copytree(FIXTURE_DATA, tmp_path / "outside")
    (allowed / "weat1.jsonl").symlink_to(outside / "weat" / "weat1.jsonl")
    flags = "CrowsPairsTools_english_french_base_file_en_US_nonMinimal.csv"
    (allowed / flags).symlink_to(outside / "flagged-rows" / flags)
    (allowed / "traits").symlink_to(outside / "kurita" / "positive_traits")
    with _server(tmp_path).in_effect():
        with pytest.raises(DataNotAllowedError, match="weat1.jsonl is outside the folders"):
            load_weat("weat1", data_dir=str(allowed), download=False)
        with pytest.raises(DataNotAllowedError, match="nonMinimal.csv is outside the folders"):
            load_flag_list("non-minimal-en", data_dir=str(allowed), download=False)
        with pytest.raises(DataNotAllowedError, match="traits is outside the folders"):
            read_word_list(allowed / "traits")
    assert load_weat("weat1", data_dir=str(allowed), download=False)  # without a server: a researcher's own links


@pytest.mark.parametrize("linked", ["model.safetensors", "config.json", "tokenizer.json"])
def test_a_model_folder_file_that_links_out_is_refused_before_it_is_read(model_dirs, tmp_path, linked, monkeypatch):
    from biaslens.engine import models
    from biaslens.errors import ModelNotAllowedError

    outside = shutil.copytree(model_dirs["bert-cased"], tmp_path / "outside" / "bert")
    folder = shutil.copytree(model_dirs["bert-cased"], tmp_path / "allowed" / "bert")
    (folder / linked).unlink()
    (folder / linked).symlink_to(outside / linked)
    monkeypatch.setattr(models, "folder_fingerprint", lambda _folder: pytest.fail("a file was read before the check"))
    with _server(tmp_path).in_effect():
        with pytest.raises(ModelNotAllowedError, match=f"{linked} is outside the folders this server may load models from .a link leads"):
            load_model(str(folder))
    monkeypatch.undo()
    assert load_model(str(folder)).source == "local"  # without a server (the CLI): the owner's links are followed


def test_a_model_folder_that_is_a_link_out_is_refused(model_dirs, tmp_path):
    from biaslens.errors import ModelNotAllowedError

    (tmp_path / "allowed").mkdir()
    (tmp_path / "allowed" / "bert").symlink_to(model_dirs["bert-cased"], target_is_directory=True)
    with _server(tmp_path).in_effect(), pytest.raises(ModelNotAllowedError, match="outside the folders"):
        load_model(str(tmp_path / "allowed" / "bert"))


# -- 3. a name too long for a path ---------------------------------------------------------------


def test_a_300_character_model_name_is_one_line_exit_2(capsys, no_model_load):
    assert main(["inspect", "--model", "a" * 300, "A woman.", "A man."]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "is not a hub id: its parts are at most 96 characters" in err and "a" * 61 not in err


def test_names_too_long_for_a_path_are_errors_not_oserrors(tmp_path):
    from biaslens.data.datasets import load_dataset
    from biaslens.errors import BiaslensError
    from biaslens.serving.server import ServerSettings

    long = "b" * 300
    server = ServerSettings(model_dirs=(tmp_path,), data_dirs=(tmp_path,))
    server.check_model(long)  # not a folder here: a hub id, which `load_model` then refuses
    with pytest.raises(InputError, match="not a hub id"):
        load_model(long)
    for call in (
        lambda: load_dataset(long),
        lambda: load_dataset("crows-pairs", data_dir=long),
        lambda: check_output_dir(tmp_path / long),
        lambda: server.check_data(f"/elsewhere/{long}"),
    ):
        with pytest.raises(BiaslensError):
            call()
    server.check_pairs_file(str(tmp_path / long), "The pairs file")  # no such file: left to the loader


# -- 4. CSV headers: linear, with a cap on columns -------------------------------------------------


def test_a_header_wider_than_the_column_cap_is_refused(tmp_path):
    from biaslens.data.datasets import MAX_COLUMNS

    path = tmp_path / "wide.csv"
    header = ["sent_more", "sent_less", *(f"c{i}" for i in range(MAX_COLUMNS - 1))]
    path.write_text(",".join(header) + "\n" + ",".join(["A woman.", "A man.", *[""] * (MAX_COLUMNS - 1)]) + "\n")
    with pytest.raises(DatasetError, match=f"the header has {MAX_COLUMNS + 1:,} columns; a pairs file has at most {MAX_COLUMNS:,}"):
        read_pairs_file(path)
    tabs = tmp_path / "wide_revised.csv"
    tabs.write_text("\t".join(["", "sent_more", "sent_less", "stereo_antistereo", "bias_type", *header[2:]]) + "\n")
    with pytest.raises(DatasetError, match="the tab-separated header has"):
        read_pairs_file(tabs)


def test_a_missing_column_message_lists_only_the_first_columns(tmp_path):
    path = tmp_path / "other.csv"
    path.write_text(",".join(f"col{i}" for i in range(50)) + "\n" + ",".join("x" * 50) + "\n")
    with pytest.raises(DatasetError) as info:
        read_custom_pairs(path)
    assert "found col0, col1" in str(info.value) and "col11, …" in str(info.value) and "col12" not in str(info.value)


# -- 5. files above the size limit are refused before they are read --------------------------------


@pytest.mark.parametrize("name", ["big.csv", "dev.json"])
def test_a_file_above_the_size_limit_is_refused_before_it_is_read(tmp_path, monkeypatch, name, capsys, no_model_load):
    from biaslens.data import datafiles

    monkeypatch.setattr(datafiles, "MAX_FILE_MB", 1)
    path = tmp_path / name
    with path.open("wb") as handle:  # 3 MB, sparse: nothing to read but its size
        handle.truncate(3_000_000)
    with pytest.raises(DatasetError, match=r"the file is 3.0 MB; biaslens reads data files up to 1 MB"):
        read_pairs_file(path)
    assert main(["evaluate", "--model", "m", "--dataset", str(path), "--out", str(tmp_path / "o")]) == 2
    assert "biaslens reads data files up to 1 MB" in _one_line(capsys.readouterr().err)


# -- 6, 7. every argument before the model loads; output paths from names -----------------------------


@pytest.mark.parametrize(
    "argv,message",
    [
        (["inspect", "", "A man."], "The stereotypical sentence is empty."),
        (["inspect", "A man.", "  "], "The anti-stereotypical sentence is empty."),
        (["inspect", "A man.", " A man. "], "The two sentences are identical"),
        (["inspect", "A\x00 woman.", "A man."], "contains the control character U+0000 (NUL) at character 2"),
        (["shuffle", ""], "The sentence is empty."),
        (["shuffle", "A\x1b[31m man."], "control character U+001B"),
        (["evaluate", "--dataset", "crows-pairs", "--flags", "bogus_check", "--out", "OUT"], "Unknown flag check bogus_check"),
        (["evaluate", "--dataset", "crows-pairs", "--out", ""], "--out is empty: name an output folder"),
        (["evaluate", "--dataset", "DATA", "--stereoset-scores", "--out", "OUT"], "No example has an unrelated sentence"),
        (["report", "--datasets", "crows-pairs", "--out", ""], "--out is empty"),
    ],
)
def test_bad_arguments_are_refused_in_one_line_before_the_model_loads(argv, message, tmp_path, capsys, monkeypatch, no_model_load):
    from tests.support import FIXTURE_DATA

    monkeypatch.chdir(tmp_path)
    argv = [a.replace("OUT", str(tmp_path / "out")).replace("DATA", str(FIXTURE_DATA / "crows-pairs" / "crows_pairs_anonymized.csv")) for a in argv]
    assert main([argv[0], "--model", "bert-base-cased", *argv[1:]]) == 2
    assert message in _one_line(capsys.readouterr().err)
    assert list(tmp_path.iterdir()) == []  # nothing written (an empty --out is not the current folder)


def test_report_on_a_pairs_file_writes_its_runs_under_the_files_name(model_dirs, tmp_path):
    data = tmp_path / "data" / "heldout_pairs.csv"
    data.parent.mkdir()
    data.write_text(PAIRS_CSV, encoding="utf-8")
    out = tmp_path / "report"
    argv = ["report", "--model", str(model_dirs["bert-cased"]), "--datasets", str(data), "--analyses", "scores,accuracy"]
    assert main([*argv, "--metrics", "aul", "--no-cache", "--out", str(out)]) == 0
    run = out / "runs" / "bert-cased" / "heldout_pairs"
    assert (run / "pairs.csv").is_file() and (run / "tokens_accuracy.csv").is_file() and (out / "manifest.json").is_file()
    assert sorted(p.name for p in data.parent.iterdir()) == ["heldout_pairs.csv"]  # nothing written beside the input
    assert "heldout_pairs" in (out / "table5_bias_scores.csv").read_text()


# -- 8. a config that disagrees with the weights -------------------------------------------------------


def test_a_config_whose_vocab_size_disagrees_with_the_weights_names_both_sizes(model_dirs, tmp_path):
    from biaslens.errors import ModelLoadError

    folder = shutil.copytree(model_dirs["bert-cased"], tmp_path / "bert")
    config = json.loads((folder / "config.json").read_text())
    rows = config["vocab_size"]
    (folder / "config.json").write_text(json.dumps({**config, "vocab_size": rows + 7}))
    with pytest.raises(ModelLoadError) as info:
        load_model(str(folder))
    assert f"config.json says vocab_size {rows + 7}, but the weights have {rows} rows" in str(info.value)
    assert "ignore_mismatched_sizes" not in str(info.value)


# -- 9. files written follow the umask -----------------------------------------------------------------


def test_a_trained_lab_model_follows_the_umask(tmp_path):
    from biaslens import lab

    old = os.umask(0o027)
    try:
        model = lab.train_lab_model(lab.LabSettings(corpus_size=200, steps=2, batch_size=16, hidden_size=32, num_layers=1), cache_dir=tmp_path)
    finally:
        os.umask(old)
    assert stat.S_IMODE(model.path.stat().st_mode) == 0o750
    modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in model.path.iterdir()}
    assert modes["model.safetensors"] == 0o640 and set(modes.values()) == {0o640}, modes


# -- 10. control characters (NUL, ...) never reach a score or a file -----------------------------------


def test_a_nul_in_a_data_file_is_refused_with_its_line(tmp_path):
    path = tmp_path / "pairs.csv"
    path.write_text("sent_more,sent_less\nA woman.,A man.\nA wo\x00man.,A man.\n", encoding="utf-8")
    with pytest.raises(DatasetError, match=r"pairs.csv: line 3 contains the control character U\+0000 \(NUL\)"):
        read_pairs_file(path)


def test_a_json_escaped_nul_is_refused_before_anything_is_written(model_dirs, tmp_path, capsys):
    path = tmp_path / "test.jsonl"
    path.write_text(json.dumps(_stereoset_line()) + "\n" + json.dumps(_stereoset_line(stereotype="The nurse was\u0000 female.")) + "\n")
    out = tmp_path / "out"
    argv = _evaluate_argv(model_dirs, path, "--no-cache")
    assert main([*argv, "--out", str(out)]) == 2
    assert "Pair 1 (sent_stereo): The sentence contains the control character U+0000 (NUL)" in _one_line(capsys.readouterr().err)
    assert not out.exists()


def test_the_engine_refuses_control_characters_in_sentences(tiny_bert):
    with pytest.raises(InputError, match="control character U"):
        tiny_bert.encode("A\x00 man.")
    with pytest.raises(InputError, match="The anti-stereotypical sentence contains the control character U\\+0007"):
        inspect_pair(tiny_bert, "A woman.", "A\x07 man.")
    assert tiny_bert.encode("A\tman.\n").text == "A\tman.\n"  # tab and line breaks are text


# -- 11. what the command line says ----------------------------------------------------------------------


def test_the_cache_count_counts_scores_of_the_pairs_scored(model_dirs, tmp_path, capsys):
    path = tmp_path / "pairs.csv"
    path.write_text(PAIRS_CSV + "Sentence 0 is about women.,Sentence 0 is about men.,gender,stereo\n", encoding="utf-8")  # a duplicate
    argv = ["evaluate", "--model", str(model_dirs["bert-cased"]), "--dataset", str(path), "--metrics", "aul,cps"]
    argv += ["--flags", "duplicate", "--exclude-flagged", "--cache-dir", str(tmp_path / "cache"), "--out", str(tmp_path / "out")]
    assert main(argv) == 0 and main(argv) == 0
    err = capsys.readouterr().err
    assert "10 of 10 scores (5 pairs × 2 metrics) came from the result cache" in err  # the 5 pairs scored, then 1 left out


def test_no_transformers_warning_about_sentences_longer_than_the_model_takes(model_dirs, tmp_path, monkeypatch):
    from transformers import tokenization_utils_base

    warned = []
    monkeypatch.setattr(tokenization_utils_base.logger, "warning", lambda message, *a, **k: warned.append(message))
    folder = shutil.copytree(model_dirs["bert-cased"], tmp_path / "bert")  # a tokenizer that knows its limit, as a lab model's
    config = json.loads((folder / "tokenizer_config.json").read_text())
    (folder / "tokenizer_config.json").write_text(json.dumps({**config, "model_max_length": 64}))
    lm = load_model(str(folder))
    long = " ".join(["word"] * 70) + "."
    with pytest.raises(InputError, match="Shorten it"):
        lm.encode(long)
    path = tmp_path / "pairs.csv"
    path.write_text(PAIRS_CSV + f"{long},{long.replace('word.', 'words.')},gender,stereo\n", encoding="utf-8")
    argv = ["evaluate", "--model", str(folder), "--dataset", str(path), "--metrics", "aul", "--limit", "2"]
    assert main([*argv, "--flags", "--no-cache", "--out", str(tmp_path / "out")]) == 0  # the flags check every pair, long ones too
    assert not [m for m in warned if "indexing errors" in m]


def test_the_first_time_left_is_measured_from_the_first_step_not_the_set_up():
    from biaslens.cli.common import LineProgress

    now = [0.0]
    out = io.StringIO()
    bar = LineProgress(1000, "step", "training", interval=10, file=out, clock=lambda: now[0])
    now[0] = 56.0  # building the corpus and the tokenizer before the first step
    bar.update(1)
    now[0] = 66.0
    bar.update(99)  # 99 steps in 10 s
    lines = out.getvalue().splitlines()
    assert lines[0] == "training: 1/1,000 steps (0%), 56 s"  # no guess from one step
    assert lines[1].startswith("training: 100/1,000 steps (10%), 66 s, about 91 s left")


def test_the_training_loss_shown_is_the_final_loss_reported(tmp_path):
    from biaslens import lab

    shown = []
    settings = lab.LabSettings(corpus_size=200, steps=40, batch_size=16, hidden_size=32, num_layers=1)
    model = lab.train_lab_model(settings, cache_dir=tmp_path, progress=lambda step, total, loss: shown.append(loss))
    assert len(shown) == 40 and shown[-1] == model.training["final_loss"]
    assert shown[-1] == pytest.approx(np.mean(model.training["losses"][-lab.loss_window(40) :]), abs=1e-4)


def test_lab_train_says_which_loss_it_shows(tmp_path, capsys):
    argv = ["lab", "train", "--corpus-size", "200", "--steps", "40", "--batch-size", "16", "--hidden-size", "32", "--layers", "1"]
    assert main([*argv, "--models-dir", str(tmp_path)]) == 0
    captured = capsys.readouterr()
    final = next(line for line in captured.out.splitlines() if "final loss" in line)
    loss = final.split("final loss ")[1].split(" ")[0]
    assert "(mean of the last 2 steps)" in final
    assert captured.err.strip().splitlines()[-1].endswith(f"mean loss of the last 2 steps {loss}")
