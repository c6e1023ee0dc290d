"""Hardening IV (issue 36): every bound a number can break, files that are no files, cache entries and files that cannot be
trusted, checks before work. Each test failed on the code before the issue; the app's cases are in tests/app."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import sqlite3
import threading
from pathlib import Path

import pandas as pd
import pytest

from biaslens.cli import main
from biaslens.data.datasets import Pair
from biaslens.engine.cache import ResultCache
from biaslens.engine.evaluation import evaluate
from biaslens.errors import DatasetError, InputError, ModelLoadError
from tests.support import FIXTURE_DATA

CROWS = FIXTURE_DATA / "crows-pairs" / "crows_pairs_anonymized.csv"


def _exit_code(argv: list[str]) -> int:
    """`main(argv)`'s exit status, whether returned or raised (argparse exits on a bad option)."""
    try:
        return main(argv)
    except SystemExit as exc:
        return int(exc.code or 0)


def _one_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    assert lines, "no error line"
    assert "Traceback" not in text
    return lines[-1]


def _pairs(n: int, *, long_at: int | None = None) -> list[Pair]:
    return [
        Pair(
            pair_id=i,
            dataset="custom",
            bias_type="gender",
            direction="stereo",
            sent_stereo=f"Sentence number {i} is about women." + (" and more" * 40 if i == long_at else ""),
            sent_anti=f"Sentence number {i} is about men.",
        )
        for i in range(n)
    ]


@pytest.fixture
def no_model_load(monkeypatch):
    """Fail the test if a model is loaded (an argument must be refused before)."""
    import biaslens.engine.models

    monkeypatch.setattr(biaslens.engine.models, "load_model", lambda *a, **k: pytest.fail("a model was loaded before the arguments were checked"))


@pytest.fixture
def no_training(monkeypatch):
    import biaslens.lab.store

    monkeypatch.setattr(biaslens.lab.store, "_train", lambda *a, **k: pytest.fail("the model was trained before the refusal"))


# -- 5. every model of a comparison checked before the first loads ------------------------------


def test_compare_checks_the_second_model_before_loading_the_first(model_dirs, tmp_path, capsys, no_model_load):
    broken = tmp_path / "broken"
    shutil.copytree(model_dirs["roberta"], broken)
    (broken / "config.json").write_text("[1, 2]")
    for second, message in (
        (str(tmp_path / "absent"), "does not exist"),
        (str(broken), "config.json names no model_type"),
        ("not a hub id!", "is not a hub id"),
        (str(model_dirs["bert-cased"]) + "/", "are the same model"),
    ):
        argv = ["compare", "--model", str(model_dirs["bert-cased"]), second, "--dataset", str(CROWS)]
        assert main(argv) == 2
        assert message in _one_line(capsys.readouterr().err)


def test_a_folder_without_config_is_refused_by_name(tmp_path):
    from biaslens.engine.models import check_model_source

    (tmp_path / "model.safetensors").write_bytes(b"x")
    with pytest.raises(ModelLoadError, match="config.json is missing"):
        check_model_source(str(tmp_path))


# -- 6. every numeric option has a range, checked before any work ------------------------------


@pytest.mark.parametrize(
    "argv, message",
    [
        (["compare", "--model", "a", "b", "--dataset", "crows-pairs", "--resamples", "1000000000"], "a number of resamples from 1 to 1,000,000"),
        (["compare", "--model", "a", "b", "--dataset", "crows-pairs", "--seed", "-1"], "expected a seed from 0 to 4,294,967,295"),
        (["kurita", "--weat", "--permutations", "100000000000", "--out", "OUT"], "expected a number of permutations from 1 to 1,000,000"),
        (["kurita", "--weat", "--seed", "-1", "--out", "OUT"], "expected a seed from 0 to 4,294,967,295"),
        (["evaluate", "--dataset", "crows-pairs", "--seed", "4294967296", "--out", "OUT"], "expected a seed"),
        (["evaluate", "--dataset", "crows-pairs", "--batch-tokens", str(10**30), "--out", "OUT"], "expected a positive integer"),
        (["report", "--datasets", "crows-pairs", "--shuffle-seed", "-5", "--out", "OUT"], "expected a seed"),
        (["shuffle", "A man.", "--seed", "x"], "expected a seed"),
        (["lab", "train", "--seed", "-1"], "expected a seed"),
        (["lab", "train", "--learning-rate", "nan"], "expected a learning rate from 0 to 1"),
        (["lab", "train", "--frequency-ratio", "inf", "--preset", "frequency"], "expected a frequency ratio from 1 to 100"),
        (["lab", "sweep", "--workers", "100000", "--out", "OUT"], "expected a number of workers from 1 to 64"),
    ],
)
def test_numbers_out_of_range_are_refused_in_one_line_before_work(argv, message, tmp_path, capsys, no_model_load, no_training):
    argv = [a.replace("OUT", str(tmp_path / "out")) for a in argv]
    assert _exit_code(argv) == 2
    assert message in _one_line(capsys.readouterr().err)
    assert not (tmp_path / "out").exists()


def test_kurita_checks_its_seed_before_scoring_through_the_api(tiny_bert):
    from biaslens.engine.stats import permutation_test

    with pytest.raises(InputError, match="seed"):
        permutation_test([1.0, 2.0, 3.0], [4.0, 5.0, 6.0], seed=-1, exact_threshold=0)


# -- 9. lab group words before training ---------------------------------------------------------


@pytest.mark.parametrize(
    "words, message",
    [("[MASK],[SEP]", "words may not contain [ or ]"), ("a\x01b,c", "control character U+0001")],
)
def test_lab_group_words_are_checked_before_training(words, message, tmp_path, capsys, no_training):
    argv = ["lab", "evaluate", "--group-a", words, "--group-b", "x,y", "--models-dir", str(tmp_path / "m")]
    assert main(argv) == 2
    assert message in _one_line(capsys.readouterr().err)


# -- 10. the lab's models folder ----------------------------------------------------------------


def test_a_models_dir_that_is_a_file_is_refused_before_training(tmp_path, capsys, no_training):
    blocker = tmp_path / "file"
    blocker.write_text("")
    for where in (blocker, blocker / "below"):
        assert main(["lab", "train", "--models-dir", str(where), "--steps", "2", "--corpus-size", "200"]) == 2
        assert "is a file, not a folder" in _one_line(capsys.readouterr().err)


def test_a_read_only_or_full_models_dir_is_refused_before_training(tmp_path, capsys, monkeypatch, no_training):
    import collections
    import tempfile

    import biaslens.lab.store as store

    real = tempfile.mkdtemp

    def read_only(*args, **kwargs):
        raise OSError(30, "Read-only file system")

    monkeypatch.setattr(store.tempfile, "mkdtemp", read_only)
    assert main(["lab", "train", "--models-dir", str(tmp_path / "ro"), "--steps", "2", "--corpus-size", "200"]) == 2
    assert "cannot be written (Read-only file system)" in _one_line(capsys.readouterr().err)
    monkeypatch.setattr(store.tempfile, "mkdtemp", real)
    usage = collections.namedtuple("usage", "total used free")
    monkeypatch.setattr(store.shutil, "disk_usage", lambda _p: usage(10**9, 10**9, 0))
    assert main(["lab", "train", "--models-dir", str(tmp_path / "full"), "--steps", "2", "--corpus-size", "200"]) == 2
    assert "0.0 MB free; this model needs about" in _one_line(capsys.readouterr().err)
    assert not [p for p in (tmp_path / "full").rglob("*") if p.is_dir() and p.name.endswith(".tmp")]  # nothing left behind


def test_a_disk_that_fills_up_during_training_is_one_line(tmp_path, capsys, monkeypatch):
    import biaslens.lab.store as store

    def full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(store, "_save_quietly", full)
    assert main(["lab", "train", "--models-dir", str(tmp_path / "m"), "--steps", "2", "--corpus-size", "200", "--hidden-size", "16",
                 "--layers", "1", "--heads", "2"]) == 2  # fmt: skip
    line = _one_line(capsys.readouterr().err)
    assert "trained but cannot be saved" in line and "No space left on device" in line
    assert not list((tmp_path / "m").glob("*.tmp"))


# -- 11, 18. one rule for every file an option names ---------------------------------------------


@pytest.fixture
def fifo(tmp_path):
    path = tmp_path / "fifo.csv"
    os.mkfifo(path)
    return path


def _within(seconds: float, call):
    """`call()`'s result, or a failure if it does not return within `seconds` (a FIFO read waits forever)."""
    out: list = []
    worker = threading.Thread(target=lambda: out.append(call()), daemon=True)
    worker.start()
    worker.join(seconds)
    if worker.is_alive():  # (the reader stays blocked in its daemon thread; the test fails rather than hangs)
        pytest.fail("still waiting after the time allowed: the file was opened as if it were a regular file")
    return out[0]


def test_kurita_refuses_a_fifo_attribute_list(fifo, tmp_path, capsys, no_model_load):
    code = _within(60, lambda: main(["kurita", "--attributes", str(fifo), "--out", str(tmp_path / "o")]))
    assert code == 2
    assert "is a FIFO (named pipe), not a regular file" in _one_line(capsys.readouterr().err)


@pytest.mark.parametrize("name", ["fifo", "/dev/zero"])
def test_a_fifo_or_a_device_as_dataset_is_called_what_it_is(name, fifo, tmp_path, capsys, no_model_load):
    path = str(fifo) if name == "fifo" else name
    code = _within(60, lambda: main(["evaluate", "--model", "m", "--dataset", path, "--out", str(tmp_path / "o")]))
    assert code == 2
    line = _one_line(capsys.readouterr().err)
    assert ("a FIFO (named pipe)" if name == "fifo" else "a device") in line and "no file" not in line


def test_the_one_file_rule(tmp_path, fifo):
    from biaslens.data.datafiles import check_data_file, read_bytes

    (tmp_path / "ok.txt").write_text("a\n")
    assert check_data_file(tmp_path / "ok.txt").st_size == 2 and read_bytes(tmp_path / "ok.txt") == b"a\n"
    cases = [(tmp_path, "a folder"), (fifo, "a FIFO"), (Path("/dev/null"), "a device"), (tmp_path / "none.txt", "no such file")]
    for path, message in cases:
        with pytest.raises(DatasetError, match=message):
            check_data_file(path)


@pytest.mark.parametrize(
    "content, message",
    [("good\nb\x00ad\n", "line 2: 'b\\x00ad' contains the control character U+0000"), ("good\n[MASK]\n", "line 2: '[MASK]' contains [ or ]")],
)
def test_a_bad_word_in_an_attribute_file_is_blamed_on_the_file_and_line(content, message, tmp_path, capsys, no_model_load):
    path = tmp_path / "traits.txt"
    path.write_text(content)
    assert main(["kurita", "--attributes", str(path), "--out", str(tmp_path / "o")]) == 2
    line = _one_line(capsys.readouterr().err)
    assert str(path) in line and message in line and "Template" not in line  # the file's line, not a template


@pytest.mark.parametrize("option, preset", [("--frequency-ratio", "association"), ("--association", "frequency")])
def test_a_strength_the_preset_does_not_plant_is_refused_not_ignored(option, preset, tmp_path, capsys, no_training):
    assert main(["lab", "train", "--preset", preset, option, "0.9" if option == "--association" else "3", "--models-dir", str(tmp_path)]) == 2
    assert f"{option} does not apply to --preset {preset}" in _one_line(capsys.readouterr().err)


# -- 8. cache entries are checked when read ------------------------------------------------------


def test_cache_entries_of_the_wrong_shape_or_infinite_are_scored_again(tiny_bert, tmp_path, caplog, monkeypatch):
    path = tmp_path / "c.sqlite"
    first = evaluate(tiny_bert, _pairs(6), ["aul"], cache=ResultCache(path))
    with sqlite3.connect(path) as db:
        keys = [k for (k,) in db.execute("SELECT key FROM scores ORDER BY key")]
        record = json.loads(db.execute("SELECT value FROM scores WHERE key = ?", (keys[5],)).fetchone()[0])
        values = ["{}", '"a string"', "[1, 2]", '{"stereo": "x", "anti": 1, "hits": 0, "total": 1}', json.dumps({**record, "stereo": float("inf")})]
        for key, value in zip(keys, values):  # well-formed, with a checksum that matches
            db.execute("UPDATE scores SET value = ?, checksum = ? WHERE key = ?", (value, hashlib.sha256(value.encode()).hexdigest()[:16], key))
    logger = logging.getLogger("biaslens")
    monkeypatch.setattr(logger, "disabled", False)  # (a library's logging set-up, earlier in a run, may have disabled it)
    logger.addHandler(caplog.handler)
    try:
        with caplog.at_level(logging.WARNING, logger="biaslens"):
            second = evaluate(tiny_bert, _pairs(6), ["aul"], cache=ResultCache(path))
    finally:
        logger.removeHandler(caplog.handler)
    pd.testing.assert_frame_equal(first.pairs, second.pairs)
    assert second.cached == 1  # only the untouched entry was read back
    assert "dropped" in caplog.text
    third = evaluate(tiny_bert, _pairs(6), ["aul"], cache=ResultCache(path))
    assert third.cached == 6  # the bad entries were replaced by good ones


# -- 12. lengths before scoring ---------------------------------------------------------------------


def test_an_over_long_pair_is_refused_before_anything_is_scored(tiny_bert, tmp_path):
    scored = []
    cache = ResultCache(tmp_path / "c.sqlite")
    with pytest.raises(InputError, match=r"Pair 15 \(sent_stereo\): The sentence has \d+ tokens"):
        lm = tiny_bert.limited(40, "this test")
        evaluate(lm, _pairs(20, long_at=15), ["aul"], cache=cache, chunk_pairs=2, progress=lambda d, t: scored.append(d))
    assert not [d for d in scored if d] and len(cache) == 0


# -- 13. a cache damaged while in use ------------------------------------------------------------


def test_a_cache_damaged_while_in_use_is_set_aside_not_switched_off(tiny_bert, tmp_path):
    path = tmp_path / "results.sqlite"
    cache = ResultCache(path)  # shared, as the app's is
    evaluate(tiny_bert, _pairs(2), ["aul"], cache=cache)
    path.write_bytes(b"\0damaged by a disk\0" * 400)  # while the server runs
    for suffix in ("-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    result = evaluate(tiny_bert, _pairs(3), ["aul"], cache=cache)
    assert cache.enabled, cache.warning
    assert len(list(tmp_path.glob("results.sqlite.corrupt-*"))) == 1
    assert any("set aside" in w for w in result.warnings)
    assert len(cache) == 3  # this run's scores are in the fresh file
    assert evaluate(tiny_bert, _pairs(3), ["aul"], cache=cache).cached == 3


# -- 14. the fingerprint is of the content ----------------------------------------------------------


def test_weights_swapped_with_their_old_time_restored_change_the_fingerprint(model_dirs, tmp_path, monkeypatch):
    from biaslens.engine.fingerprint import folder_fingerprint

    monkeypatch.setenv("BIASLENS_CACHE_DIR", str(tmp_path / "cache"))
    folder = tmp_path / "m"
    shutil.copytree(model_dirs["bert-cased"], folder)
    weights = folder / "model.safetensors"
    before = folder_fingerprint(folder)
    stat = weights.stat()
    data = bytearray(weights.read_bytes())
    data[-8:] = bytes(8 - i for i in range(8))  # another model's weights, the same size
    weights.write_bytes(bytes(data))
    os.utime(weights, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # the old modification time restored
    assert weights.stat().st_size == stat.st_size and weights.stat().st_mtime_ns == stat.st_mtime_ns
    assert folder_fingerprint(folder) != before


def test_the_models_module_still_offers_the_fingerprint():
    from biaslens.engine import fingerprint, models

    assert models.folder_fingerprint is fingerprint.folder_fingerprint


# -- 15. config.json before hashing ----------------------------------------------------------------


def test_a_folder_that_is_no_model_is_refused_before_any_file_is_hashed(tmp_path, monkeypatch):
    import biaslens.engine.fingerprint as fingerprint
    from biaslens.engine.models import load_model

    (tmp_path / "hub" / "models--x").mkdir(parents=True)
    (tmp_path / "hub" / "models--x" / "big.bin").write_bytes(b"\0" * 1000)
    monkeypatch.setattr(fingerprint, "sha256_file", lambda p: pytest.fail(f"{p} was hashed before config.json was looked for"))
    with pytest.raises(ModelLoadError, match="is not a model folder: config.json is missing"):
        load_model(str(tmp_path / "hub"))


# -- 16. devices torch knows and biaslens does not run on -------------------------------------------


@pytest.mark.parametrize("device", ["meta", "xla", "xpu"])
def test_a_device_biaslens_does_not_run_on_is_one_line(device, model_dirs, tmp_path, capsys):
    argv = ["evaluate", "--model", str(model_dirs["bert-cased"]), "--dataset", str(CROWS), "--device", device, "--out", str(tmp_path / "o")]
    assert main(argv) == 2
    assert f"Device {device!r} is not one biaslens runs on" in _one_line(capsys.readouterr().err)


# -- 7. names in report.md are text ----------------------------------------------------------------


def test_report_md_writes_file_model_and_dataset_names_as_text(model_dirs, tmp_path):
    import re

    from markdown_it import MarkdownIt

    from tests.support.app import live_markup

    model = tmp_path / "[click](www.evil.example) www.evil.example"
    shutil.copytree(model_dirs["bert-cased"], model)
    pairs = tmp_path / "![i](evil.example.png) <b>x@evil.example.csv"
    rows = "".join(f"She fixed car {i}.,He fixed car {i}.,[t](http://evil.example/t)\n" for i in range(4))
    pairs.write_text("sent_more,sent_less,bias_type\n" + rows)
    out = tmp_path / "out"
    assert main(["report", "--model", str(model), "--datasets", str(pairs), "--analyses", "scores", "--no-cache", "--out", str(out)]) == 0
    text = (out / "report.md").read_text()
    assert "evil.example" in text  # the names are there, as text
    lines = [line for line in text.splitlines() if "evil" in line]
    assert lines and not live_markup(lines), live_markup(lines)
    rendered = MarkdownIt("commonmark").render(text)
    assert not re.search(r"<(a|img)[^>]*evil|<b>", rendered), rendered[:2000]  # (the report's own figures are images)
