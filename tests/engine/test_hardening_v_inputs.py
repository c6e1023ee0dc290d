"""Hardening V (issue 41, items 6, 10-13 and the lab's half of 14): the last inputs that escaped the one-line rule. Each
test failed on the code before the issue (checked by reverting the fix); the app's case (/compare's repeats) is in
tests/app/test_compare.py."""

from __future__ import annotations

import json
import re
import shutil

import pytest

from biaslens.engine.models import load_model
from biaslens.errors import ModelLoadError


@pytest.fixture(scope="module")
def gpt2_dir(tmp_path_factory):
    from biaslens.engine.testing import build_random_causal_model

    return build_random_causal_model("gpt2", None, tmp_path_factory.mktemp("gpt2") / "gpt2")


@pytest.fixture
def nothing_built(monkeypatch):
    """Fail the load if transformers is asked to build the model: the config must be refused before."""
    import transformers

    def built(*args, **kwargs):
        raise AssertionError("the model was built before the config was checked")

    for auto in (transformers.AutoModelForCausalLM, transformers.AutoModelForMaskedLM):
        monkeypatch.setattr(auto, "from_pretrained", built)


def _with_config(source, folder, **changes):
    shutil.copytree(source, folder)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, **changes}))
    return folder


# -- 6. a config that asks for more than its weights hold: refused before the model is built -------------------------


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"n_layer": 100_000}, "config.json says 100,000 layers, but the weights hold 2: the config does not belong to these weights"),
        ({"n_layer": 0}, "config.json says 0 layers, but the weights hold 2"),
        ({"n_layer": 1}, "config.json says 1 layer, but the weights hold 2"),  # (the second layer's weights left unread)
        ({"n_positions": 10_000_000}, "transformer.wpe.weight has shape (1024, 32) in the weights but (10000000, 32) by the config"),
        ({"vocab_size": 1_000_000_000}, "config.json says vocab_size 1000000000, but the weights have 700 rows (transformer.wte.weight)"),
        ({"n_inner": 1_000_000_000}, "has shape (64,) in the weights but (1000000000,) by the config"),
    ],
)
def test_a_config_larger_than_its_weights_is_refused_before_the_model_is_built(gpt2_dir, tmp_path, nothing_built, changes, message):
    folder = _with_config(gpt2_dir, tmp_path / "gpt2", **changes)
    with pytest.raises(ModelLoadError) as info:
        load_model(str(folder))
    assert message in str(info.value) and "\n" not in str(info.value)


def test_a_masked_model_with_an_absurd_number_of_layers_is_refused_before_it_is_built(model_dirs, tmp_path, nothing_built):
    folder = _with_config(model_dirs["bert-cased"], tmp_path / "bert", num_hidden_layers=100_000)
    with pytest.raises(ModelLoadError, match="config.json says 100,000 layers, but the weights hold 2"):
        load_model(str(folder))


def test_weights_of_other_names_under_an_absurd_config_are_refused_by_their_size(gpt2_dir, tmp_path, nothing_built):
    from safetensors.torch import load_file, save_file

    folder = _with_config(gpt2_dir, tmp_path / "gpt2", n_positions=10_000_000)
    weights = load_file(folder / "model.safetensors")
    save_file({f"other.{key}": value for key, value in weights.items()}, folder / "model.safetensors", metadata={"format": "pt"})
    with pytest.raises(ModelLoadError, match=r"config.json describes a model of [\d,]+ weights, [\d,]+ of which its weights files do not hold"):
        load_model(str(folder))


def test_a_config_that_fits_its_weights_still_loads(gpt2_dir, model_dirs):
    assert load_model(str(gpt2_dir)).kind == "causal"
    assert load_model(str(model_dirs["albert"])).kind == "masked"  # (one layer's weights, shared by every layer)


@pytest.mark.parametrize(
    "family, changes, said",
    [
        ("gpt2", {"n_layer": "x"}, "config.json gives n_layer the value 'x' (a str), where int is expected"),
        ("gpt2", {"n_positions": [1024]}, "config.json gives n_positions the value [1024] (a list), where int is expected"),
        ("gpt2", {"n_head": None}, "config.json gives n_head the value null, where int is expected"),
        ("bert-cased", {"num_hidden_layers": 2.5}, "config.json gives num_hidden_layers the value 2.5 (a float), where int is expected"),
    ],
)
def test_a_config_field_of_the_wrong_type_is_one_line_naming_the_field_its_value_and_the_type(gpt2_dir, model_dirs, tmp_path, family, changes, said):
    """transformers' message spans lines and its first names the field alone ("Validation error for field 'n_layer':"),
    and it surfaced as "Could not load the tokenizer of ...": the tokenizer reads the config first."""
    folder = _with_config(gpt2_dir if family == "gpt2" else model_dirs[family], tmp_path / family, **changes)
    with pytest.raises(ModelLoadError) as info:
        load_model(str(folder))
    assert str(info.value) == f"{folder}: {said}; correct it, or copy the model's own config.json."


def _as_pickle(folder, sharded: bool = False):
    """The folder with its weights as pytorch_model.bin (or two shards and their index) instead of model.safetensors."""
    import torch
    from safetensors.torch import load_file

    weights = load_file(folder / "model.safetensors")
    (folder / "model.safetensors").unlink()
    if not sharded:
        torch.save(weights, folder / "pytorch_model.bin")
        return folder
    keys = sorted(weights)
    shards = {"pytorch_model-00001-of-00002.bin": keys[: len(keys) // 2], "pytorch_model-00002-of-00002.bin": keys[len(keys) // 2 :]}
    for file, names in shards.items():
        torch.save({k: weights[k] for k in names}, folder / file)
    (folder / "pytorch_model.bin.index.json").write_text(
        json.dumps({"metadata": {}, "weight_map": {k: f for f, names in shards.items() for k in names}})
    )
    return folder


@pytest.mark.parametrize("sharded", [False, True])
def test_a_pickle_folder_s_config_larger_than_its_weights_is_refused_before_the_model_is_built(gpt2_dir, tmp_path, nothing_built, sharded):
    """The check read safetensors headers only: a pytorch_model.bin folder (--allow-pickle) built 100,000 layers. Its
    shapes are read without the data (memory-mapped onto the meta device)."""
    folder = _as_pickle(_with_config(gpt2_dir, tmp_path / "gpt2", n_layer=100_000), sharded)
    with pytest.raises(ModelLoadError, match="config.json says 100,000 layers, but the weights hold 2: the config does not belong"):
        load_model(str(folder), allow_pickle=True)
    folder = _as_pickle(_with_config(gpt2_dir, tmp_path / "wide", n_positions=10_000_000), sharded)
    with pytest.raises(ModelLoadError, match=re.escape("has shape (1024, 32) in the weights but (10000000, 32) by the config")):
        load_model(str(folder), allow_pickle=True)


def test_a_pickle_folder_whose_config_fits_still_loads(gpt2_dir, tmp_path):
    folder = _as_pickle(shutil.copytree(gpt2_dir, tmp_path / "gpt2"), sharded=True)
    assert load_model(str(folder), allow_pickle=True).kind == "causal"


@pytest.fixture
def hub_cache(tmp_path, monkeypatch):
    """A Hugging Face cache on this machine, offline: `put(folder, "org/name")` puts a folder's files in as a snapshot."""
    from huggingface_hub import constants

    cache = tmp_path / "hf-cache"
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)

    def put(folder, repo: str, commit: str = "0" * 40):
        root = cache / f"models--{repo.replace('/', '--')}"
        shutil.copytree(folder, root / "snapshots" / commit)
        (root / "refs").mkdir()
        (root / "refs" / "main").write_text(commit)
        return repo

    return put


def test_a_hub_model_s_config_in_the_local_cache_is_checked_against_its_cached_weights(gpt2_dir, tmp_path, hub_cache, nothing_built):
    """A hub id loaded from the local cache was not checked (only local folders were): its snapshot is a folder too."""
    repo = hub_cache(_with_config(gpt2_dir, tmp_path / "gpt2", n_layer=100_000), "org/tiny-gpt2")
    with pytest.raises(ModelLoadError, match="org/tiny-gpt2: config.json says 100,000 layers, but the weights hold 2"):
        load_model(repo)


def test_a_hub_model_in_the_local_cache_whose_config_fits_still_loads(gpt2_dir, hub_cache):
    assert load_model(hub_cache(gpt2_dir, "org/tiny-gpt2")).kind == "causal"


def test_a_hub_snapshot_missing_a_shard_is_left_to_the_download(gpt2_dir, tmp_path, hub_cache):
    """Shards still to be downloaded: the cached ones are no model (and no damaged one), so nothing is checked yet; a
    local folder missing one is refused, as before."""
    from biaslens.engine.models import _cached_hub_shapes

    folder = _as_pickle(shutil.copytree(gpt2_dir, tmp_path / "gpt2"), sharded=True)
    assert len(_cached_hub_shapes(hub_cache(folder, "org/whole"), None, allow_pickle=True)) > 10
    assert _cached_hub_shapes("org/whole", None, allow_pickle=False) == {}  # (pickle weights are not read unless allowed)
    (folder / "pytorch_model-00002-of-00002.bin").unlink()
    assert _cached_hub_shapes(hub_cache(folder, "org/partial"), None, allow_pickle=True) == {}
    assert _cached_hub_shapes("org/absent", None, allow_pickle=True) == {}
    with pytest.raises(ModelLoadError, match="weight shard pytorch_model-00002-of-00002.bin is missing"):
        load_model(str(folder), allow_pickle=True)


# -- 11. a loop of links inside an allowed folder: one line, not "Unexpected error (RuntimeError)" ----------------------


def test_a_loop_of_links_is_refused_in_one_line_under_a_server_s_allowed_folders(model_dirs, tmp_path):
    from biaslens.errors import DatasetError
    from biaslens.serving.server import ServerSettings

    folder = shutil.copytree(model_dirs["bert-cased"], tmp_path / "allowed" / "bert")
    (folder / "self").symlink_to(folder / "self")
    (tmp_path / "allowed" / "pairs.csv").symlink_to(tmp_path / "allowed" / "pairs.csv")
    server = ServerSettings.from_env({"BIASLENS_MODEL_DIRS": str(tmp_path / "allowed"), "BIASLENS_DATA_DIRS": str(tmp_path / "allowed")})
    loop = "is a symbolic link that leads back to itself (a loop of links), so it names no file: remove it."
    with server.in_effect():
        with pytest.raises(ModelLoadError, match=re.escape(f"{folder / 'self'} {loop}")):
            load_model(str(folder))
        with pytest.raises(ModelLoadError, match=re.escape(f"{folder / 'self'} {loop}")):
            server.check_model(str(folder / "self"))
        with pytest.raises(DatasetError, match=re.escape(f"{tmp_path / 'allowed' / 'pairs.csv'} {loop}")):
            server.check_data(tmp_path / "allowed" / "pairs.csv")
    assert load_model(str(folder)).kind == "masked"  # (the CLI and Python: the loop names no file, nothing to refuse)


# -- 12. score --words / --sequences: the files beside OUT are checked before the model loads -------------------------


@pytest.mark.parametrize("option", ["--words", "--sequences"])
def test_score_refuses_a_folder_where_a_file_beside_out_goes_before_the_model_loads(model_dirs, tmp_path, monkeypatch, capsys, option):
    import biaslens.engine.models as models
    from biaslens.cli import main

    monkeypatch.setattr(models, "load_model", lambda *a, **k: pytest.fail("the model loaded before the outputs were checked"))
    (tmp_path / "texts.txt").write_text("A text.\n", encoding="utf-8")
    beside = tmp_path / f"t{option.replace('--', '.')}.csv"
    beside.mkdir()
    argv = ["score", "--model", str(model_dirs["bert-cased"]), "--file", str(tmp_path / "texts.txt"), "--out", str(tmp_path / "t.csv"), option]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"biaslens score: error: {option} writes {beside} beside --out, but that is a folder: move it, or choose another --out."
    assert not (tmp_path / "t.csv").exists()  # (before: the token table written, then the words refused after scoring)


# -- 13. the Python API: a lone surrogate or bytes is an InputError naming the text -------------------------------------


SURROGATE = "a lone surrogate, U+D800 at character 8: half of a character, not text"


@pytest.mark.parametrize(
    "texts, options, message",
    [
        (["A good day.", "A good \ud800 day."], {}, f"Text 2 contains {SURROGATE}"),  # (a raw TypeError from tokenizers)
        ("A good \ud800 day.", {}, f"Text 1 contains {SURROGATE}"),
        (b"A good day.", {}, "Text 1 is bytes, not text: decode it first (e.g. .decode('utf-8'))."),  # ("must be a str, not int")
        ([b"A good day."], {}, "Text 1 is bytes, not text: decode it first"),
        (["A day."], {"prefix": "A good \ud800 day."}, f"The prefix contains {SURROGATE}"),
        (["A day."], {"prefix": b"ab"}, "The prefix is bytes, not text"),  # ("2 prefixes for 1 texts")
        (["A day."], {"prefix": [b"ab"]}, "The prefix of text 1 is bytes, not text"),  # ("is empty")
        (["A day."], {"prefix": "Then", "separator": "\x00"}, "The separator contains the control character U+0000 (NUL) at character 1"),
        (["A day."], {"prefix": "Then", "separator": "\udc80"}, "The separator contains a lone surrogate, U+DC80 at character 1"),
    ],
)
def test_score_refuses_what_is_not_text_in_one_line_naming_it(tiny_models, texts, options, message):
    import biaslens
    from biaslens.errors import InputError

    with pytest.raises(InputError) as info:
        biaslens.score(tiny_models["bert-cased"], texts, **options)
    assert message in str(info.value) and "\n" not in str(info.value)


def test_a_command_line_argument_that_is_not_utf8_is_one_line(model_dirs, capsys):
    from biaslens.cli import main

    # Python reads an argument's bytes that are not UTF-8 ($'\xff') as lone surrogates (surrogateescape).
    assert main(["inspect", "--model", str(model_dirs["bert-cased"]), "A \udcff b.", "A c b."]) == 2
    err = capsys.readouterr().err.strip()
    assert "The stereotypical sentence contains a lone surrogate, U+DCFF at character 3" in err and len(err.splitlines()) == 1


# -- 14 (the lab's half) and its neighbours: an empty folder option, a folder name that is not UTF-8 ------------------


@pytest.fixture
def no_training(monkeypatch):
    import biaslens.lab.store

    monkeypatch.setattr(biaslens.lab.store, "_train", lambda *a, **k: pytest.fail("the model was trained before the refusal"))


@pytest.mark.parametrize(
    "argv, option",
    [
        (["lab", "train", "--models-dir", ""], "--models-dir"),  # (trained into the default cache)
        (["lab", "evaluate", "--models-dir", "  "], "--models-dir"),
        (["lab", "sweep", "--models-dir", "", "--out", "OUT"], "--models-dir"),
        (["evaluate", "--model", "m", "--dataset", "crows-pairs", "--out", "OUT", "--cache-dir", ""], "--cache-dir"),  # (the default cache)
        (["datasets", "--data-dir", ""], "--data-dir"),  # (the current folder, searched recursively)
    ],
)
def test_an_empty_folder_option_is_refused_before_any_work(tmp_path, capsys, no_training, argv, option):
    from biaslens.cli import main

    assert main([str(tmp_path / "out") if a == "OUT" else a for a in argv]) == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith(f"error: {option} is empty: name a folder, or leave the option out for the default.") and len(err.splitlines()) == 1


def test_a_lab_models_folder_whose_name_is_not_utf8_is_refused_before_training(tmp_path, capsys, no_training):
    from biaslens.cli import main

    folder = tmp_path / "lab\udcff"  # (bytes b"lab\xff" on disk: Python reads them as a surrogate)
    assert main(["lab", "train", "--models-dir", str(folder), "--steps", "2", "--corpus-size", "200"]) == 2  # (trained, then a traceback)
    err = capsys.readouterr().err.strip()
    assert f"{tmp_path / 'lab'}\\xff cannot be used: its name is not UTF-8, which the tokenizer's files need. Choose another (--models-dir)." in err
    assert len(err.splitlines()) == 1


def test_a_model_folder_whose_path_is_not_utf8_says_so(model_dirs, tmp_path):
    folder = shutil.copytree(model_dirs["bert-cased"], tmp_path / "m\udcff" / "bert")
    with pytest.raises(ModelLoadError, match="its path is not UTF-8, and safetensors and the tokenizer open only UTF-8 paths: rename it"):
        load_model(str(folder))  # ("the weights file model.safetensors is corrupted or incomplete ...; download or copy it again")


# -- neighbours of 13: score's other arguments, each refused in one line ---------------------------------------------


@pytest.mark.parametrize(
    "options, message",
    [
        ({"prefix": 123}, "The prefix must be a str, or a list of them (one per text), not int."),  # ('int' object is not iterable)
        ({"suffix": object()}, "The suffix must be a str, or a list of them (one per text), not object."),
        ({"batch_tokens": "x"}, "batch_tokens must be a whole number of at least 1, not 'x'."),  # (unsupported operand type(s) for //)
        ({"batch_tokens": 0}, "batch_tokens must be a whole number of at least 1, not 0."),  # (accepted)
        ({"chunk_texts": 0}, "chunk_texts must be a whole number of at least 1, not 0."),  # ("chunk_pairs must be ...")
        ({"progress": 5}, "progress must be a function (or None), not int."),  # ('int' object is not callable)
        ({"stop": 5}, "stop must be a function (or None), not int."),
    ],
)
def test_score_refuses_a_bad_argument_in_one_line(tiny_models, options, message):
    import biaslens
    from biaslens.errors import InputError

    with pytest.raises(InputError) as info:
        biaslens.score(tiny_models["bert-cased"], ["A good day."], **options)
    assert str(info.value) == message


# -- neighbours of 12: a folder where a command's result file goes, refused before the model loads ------------------


@pytest.mark.parametrize(
    "argv, blocked",
    [
        (["evaluate", "--model", "M", "--dataset", "CROWS", "--metrics", "aul", "--out", "OUT"], "pairs.csv"),
        (["evaluate", "--model", "M", "--dataset", "CROWS", "--metrics", "aul", "--flags", "all", "--out", "OUT"], "flagged.csv"),
        (["compare", "--model", "M", "M2", "--dataset", "CROWS", "--metrics", "aul", "--out", "OUT"], "comparison.json"),
        (["conventions", "--model", "M", "--dataset", "CROWS", "--out", "OUT"], "flips.csv"),
        # kurita, report, lab evaluate and lab sweep scored (or trained) first, then failed to write (polish, item 5)
        (["kurita", "--model", "M", "--attributes", "ATTR", "--out", "OUT"], "careers_summary.json"),
        (["kurita", "--model", "M", "--attributes", "ATTR", "--out", "OUT"], "shares.csv"),
        (["report", "--model", "M", "--datasets", "CROWS", "--analyses", "scores", "--out", "OUT"], "table5_bias_scores.csv"),
        (["report", "--model", "M", "--datasets", "CROWS", "--out", "OUT"], "report.html"),
        (["lab", "evaluate", "--out", "OUT"], "summary.json"),
        (["lab", "evaluate", "--model", "M", "--out", "OUT"], "pairs.csv"),
        (["lab", "sweep", "--associations", "0.5,1", "--out", "OUT"], "sweep.json"),
    ],
)
def test_a_folder_where_a_result_file_goes_is_refused_before_the_model_loads(no_training, model_dirs, tmp_path, monkeypatch, capsys, argv, blocked):
    said = f"--out {tmp_path / 'out'} holds a folder named {blocked}, where a file of the results goes: move it, or choose another folder."
    _refused_before_any_work(model_dirs, tmp_path, monkeypatch, capsys, argv, blocked, said)


def test_a_folder_where_a_scenario_s_result_file_goes_is_refused_before_training(no_training, model_dirs, tmp_path, monkeypatch, capsys):
    """--preset all writes each scenario's files into a subfolder of its own (the second of four here)."""
    said = (
        f"--out {tmp_path / 'out' / 'frequency'} holds a folder named pairs.csv, where a file of the results goes: move it, or choose another folder."
    )
    _refused_before_any_work(
        model_dirs, tmp_path, monkeypatch, capsys, ["lab", "evaluate", "--preset", "all", "--out", "OUT"], "frequency/pairs.csv", said
    )


def _refused_before_any_work(model_dirs, tmp_path, monkeypatch, capsys, argv, blocked, said):
    import biaslens.engine.models as models
    from biaslens.cli import main
    from tests.support import FIXTURE_DATA

    monkeypatch.setattr(models, "load_model", lambda *a, **k: pytest.fail("the model loaded before the outputs were checked"))
    (tmp_path / "out" / blocked).mkdir(parents=True)
    (tmp_path / "careers.txt").write_text("nurse\nengineer\n")
    names = {
        "M": str(model_dirs["bert-cased"]),
        "M2": str(model_dirs["roberta"]),
        "OUT": str(tmp_path / "out"),
        "ATTR": str(tmp_path / "careers.txt"),
    }
    names["CROWS"] = str(FIXTURE_DATA / "crows-pairs" / "crows_pairs_anonymized.csv")
    assert main([names.get(a, a) for a in argv]) == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith(said)
    assert len(err.splitlines()) == 1 and [p.name for p in (tmp_path / "out").iterdir()] == [blocked.split("/")[0]]
