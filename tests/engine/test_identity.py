"""biaslens.engine.identity: every spelling of one model is one identity (issue 36, item 2)."""

from __future__ import annotations

import pytest

from biaslens.engine.identity import ModelIdentity, distinct_models, model_identity
from biaslens.errors import InputError


def test_spellings_of_one_folder_are_one_identity(tmp_path, monkeypatch):
    folder = tmp_path / "M" / "mid"
    folder.mkdir(parents=True)
    (tmp_path / "link").symlink_to(folder)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    spellings = [
        str(folder),
        f"{folder}/",
        f"{tmp_path}/M/./mid",
        f"{tmp_path}/M/././mid",
        f"{tmp_path}/M/../M/mid",
        "./M/mid",
        "~/M/mid",
        str(tmp_path / "link"),
    ]
    identities = {model_identity(s) for s in spellings}
    assert identities == {ModelIdentity("local", str(folder.resolve()))}
    assert model_identity(str(folder), "v2") == ModelIdentity("local", str(folder.resolve()))  # a revision is a hub's


def test_hub_ids_are_the_id_and_its_revision():
    assert model_identity("bert-base-cased") == model_identity(" bert-base-cased ", "main") == ModelIdentity("hub", "bert-base-cased", "main")
    assert model_identity("bert-base-cased", "v1") != model_identity("bert-base-cased")
    assert model_identity("org/name").source == "hub"
    assert str(model_identity("org/name", "abc")) == "org/name@abc"


@pytest.mark.parametrize("name", ["", "  ", "a\0b", "/tmp/x\0"])
def test_a_name_that_is_no_model_is_refused_in_one_line(name):
    with pytest.raises(InputError) as caught:
        model_identity(name)
    assert "\n" not in str(caught.value)


def test_distinct_models_keep_the_first_spelling_and_name_the_repeats(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir(), b.mkdir()
    names = [str(a), f"{tmp_path}/./a", str(b), f"{b}/", "bert-base-cased", "bert-base-cased", "x\0y", "x\0y"]
    kept, repeats = distinct_models(names)
    assert kept == [str(a), str(b), "bert-base-cased", "x\0y"]
    assert repeats == {f"{tmp_path}/./a": str(a), f"{b}/": str(b), "bert-base-cased": "bert-base-cased", "x\0y": "x\0y"}
