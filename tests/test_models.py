"""Loading: local folders, manifests, clear and fast errors."""

import time

import pytest
import torch

from biaslens.errors import HubUnreachableError, InputError, ModelLoadError, NotMaskedLMError
from biaslens.models import folder_fingerprint, load_model, resolve_dtype


def test_local_folder_loads_with_a_manifest(tiny_bert, model_dirs):
    m = tiny_bert.manifest(compat="default")
    assert m["source"] == "local"
    assert m["fingerprint"].startswith("sha256:")
    assert m["dtype"] == "float32" and m["device"] == "cpu" and m["compat"] == "default"
    assert {"torch", "transformers", "python", "biaslens"} <= set(m["versions"])
    assert m["model"] == str(model_dirs["bert-cased"].resolve())


def test_the_head_is_split_off_for_every_family(tiny_models):
    for lm in tiny_models.values():
        assert lm.project is not None, lm.model_type


def test_the_shared_model_keeps_sdpa_attention(tiny_bert):
    tiny_bert._eager_model()
    assert tiny_bert.model.config._attn_implementation != "eager"
    assert tiny_bert._eager_model().config._attn_implementation == "eager"
    shared = tiny_bert._eager_model().get_input_embeddings().weight
    assert shared.data_ptr() == tiny_bert.model.get_input_embeddings().weight.data_ptr()


def test_fingerprint_changes_with_the_weights(tmp_path, model_dirs):
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(model_dirs["bert-cased"], copy)
    before = folder_fingerprint(copy)
    assert before == folder_fingerprint(model_dirs["bert-cased"])  # content, not path
    with (copy / "config.json").open("a") as handle:
        handle.write("\n")
    assert folder_fingerprint(copy) != before


def test_missing_folder(tmp_path):
    with pytest.raises(ModelLoadError, match="does not exist"):
        load_model(str(tmp_path / "nope"))


def test_unreachable_hub_fails_fast_with_a_useful_message(monkeypatch):
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "ENDPOINT", "http://127.0.0.1:9")  # nothing listens there
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    started = time.perf_counter()
    with pytest.raises(HubUnreachableError) as info:
        load_model("bert-base-cased")
    assert time.perf_counter() - started < 10
    message = str(info.value)
    assert "bert-base-cased" in message and "local folder" in message
    assert "\n" not in message


def test_offline_mode_fails_at_once(monkeypatch):
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    with pytest.raises(HubUnreachableError, match="HF_HUB_OFFLINE"):
        load_model("some-org/some-model")


def test_a_model_without_masked_lm_head_is_refused(tmp_path, model_dirs):
    from transformers import BertModel, GPT2Config, GPT2LMHeadModel

    from biaslens.testing import build_config

    headless = tmp_path / "headless"
    BertModel(build_config("bert-cased")).save_pretrained(headless)
    for f in model_dirs["bert-cased"].iterdir():
        if f.name not in ("config.json", "model.safetensors"):
            (headless / f.name).write_bytes(f.read_bytes())
    with pytest.raises(NotMaskedLMError, match="no trained masked-LM head"):
        load_model(str(headless))

    gpt = tmp_path / "gpt"
    GPT2LMHeadModel(GPT2Config(n_layer=1, n_embd=16, n_head=2, vocab_size=28996)).save_pretrained(gpt)
    for f in model_dirs["bert-cased"].iterdir():
        if f.name not in ("config.json", "model.safetensors"):
            (gpt / f.name).write_bytes(f.read_bytes())
    with pytest.raises(NotMaskedLMError, match="not a masked language model"):
        load_model(str(gpt))


def test_pickle_weights_need_an_explicit_opt_in(tmp_path, model_dirs):
    folder = tmp_path / "pickled"
    folder.mkdir()
    for f in model_dirs["bert-cased"].iterdir():
        if f.name != "model.safetensors":
            (folder / f.name).write_bytes(f.read_bytes())
    from safetensors.torch import load_file

    torch.save(load_file(model_dirs["bert-cased"] / "model.safetensors"), folder / "pytorch_model.bin")
    with pytest.raises(ModelLoadError, match="pickle"):
        load_model(str(folder))
    assert load_model(str(folder), allow_pickle=True).project is not None


def test_half_precision_is_refused_on_cpu():
    with pytest.raises(InputError, match="GPU"):
        resolve_dtype("bfloat16", torch.device("cpu"))


def test_bad_sentences_get_clear_errors(tiny_bert):
    with pytest.raises(InputError, match="empty"):
        tiny_bert.encode("   ")
    with pytest.raises(InputError, match="at most 512"):
        tiny_bert.encode("word " * 600)
    with pytest.raises(InputError, match=r"reserved token \[MASK\]"):
        tiny_bert.encode("The [MASK] is here.")
    assert tiny_bert.encode("An emoji 🙂 is unknown.").ids  # [UNK] is fine
