"""Loading: local folders, manifests, clear and fast errors."""

import json
import time

import pytest
import torch

from biaslens.errors import HubUnreachableError, InputError, ModelLoadError, NotMaskedLMError
from biaslens.engine.models import folder_fingerprint, load_model, resolve_dtype


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

    from biaslens.engine.testing import build_config

    headless = tmp_path / "headless"
    BertModel(build_config("bert-cased")).save_pretrained(headless)
    for f in model_dirs["bert-cased"].iterdir():
        if f.name not in ("config.json", "model.safetensors"):
            (headless / f.name).write_bytes(f.read_bytes())
    with pytest.raises(NotMaskedLMError, match="no trained masked-LM head"):
        load_model(str(headless))

    # A GPT-2 is a causal LM, whatever tokenizer it comes with: this one (BERT's) has no BOS or EOS token, so nothing
    # comes before a sentence and its first token is context only (said in the manifest, never silently).
    gpt = tmp_path / "gpt"
    GPT2LMHeadModel(GPT2Config(n_layer=1, n_embd=16, n_head=2, vocab_size=28996)).save_pretrained(gpt)
    for f in model_dirs["bert-cased"].iterdir():
        if f.name not in ("config.json", "model.safetensors"):
            (gpt / f.name).write_bytes(f.read_bytes())
    causal = load_model(str(gpt))
    assert causal.kind == "causal" and causal.first_token == "none" and causal.manifest()["first_token"] == "none"
    with pytest.raises(InputError, match="no BOS or EOS token"):
        causal.with_first_token("bos")


def test_sequence_to_sequence_models_are_refused_in_one_line(tmp_path, model_dirs):
    from transformers import T5Config, T5ForConditionalGeneration

    from biaslens.errors import UnsupportedModelError

    folder = tmp_path / "t5"
    T5ForConditionalGeneration(T5Config(vocab_size=28996, d_model=16, d_ff=32, num_layers=1, num_heads=2, d_kv=8)).save_pretrained(folder)
    for f in model_dirs["bert-cased"].iterdir():
        if f.name not in ("config.json", "model.safetensors"):
            (folder / f.name).write_bytes(f.read_bytes())
    with pytest.raises(UnsupportedModelError, match="sequence-to-sequence") as info:
        load_model(str(folder))
    assert "causal LMs (GPT-2" in str(info.value) and "\n" not in str(info.value)


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


def _damage(folder, how):
    weights = folder / "model.safetensors"
    if how == "truncated weights":
        weights.write_bytes(weights.read_bytes()[:-100])
    elif how == "garbage weights":
        weights.write_bytes(b"not a safetensors file" * 10)
    elif how == "no weights":
        weights.unlink()
    elif how == "no config":
        (folder / "config.json").unlink()
    elif how == "no tokenizer":
        for f in folder.iterdir():
            if f.name not in ("config.json", "model.safetensors"):
                f.unlink()
    elif how == "missing layer":
        from safetensors.torch import load_file, save_file

        tensors = {k: v for k, v in load_file(weights).items() if ".layer.0." not in k}
        save_file(tensors, weights, metadata={"format": "pt"})
    elif how == "missing shard":
        index = {
            "metadata": {},
            "weight_map": {
                "bert.embeddings.word_embeddings.weight": "model-00001-of-00002.safetensors",
                "cls.predictions.bias": "model-00002-of-00002.safetensors",
            },
        }
        weights.rename(folder / "model-00001-of-00002.safetensors")
        (folder / "model.safetensors.index.json").write_text(json.dumps(index))


@pytest.mark.parametrize(
    "how, fragment",
    [
        ("truncated weights", "model.safetensors is corrupted or incomplete"),
        ("garbage weights", "model.safetensors is corrupted or incomplete"),
        ("no weights", "no weights: model.safetensors is missing"),
        ("no config", "not a model folder: config.json is missing"),
        ("no tokenizer", "no tokenizer files"),
        ("missing layer", "is incomplete: 16 weights of the model itself are missing"),
        ("missing shard", "weight shard model-00002-of-00002.safetensors is missing"),
    ],
)
def test_a_corrupted_or_incomplete_folder_gets_a_clear_message_at_once(tmp_path, model_dirs, how, fragment):
    import shutil

    folder = tmp_path / "damaged"
    shutil.copytree(model_dirs["bert-cased"], folder)
    _damage(folder, how)
    started = time.perf_counter()
    with pytest.raises(ModelLoadError) as info:
        load_model(str(folder))
    assert time.perf_counter() - started < 10
    assert fragment in str(info.value) and "\n" not in str(info.value)
    assert not isinstance(info.value, NotMaskedLMError)  # a damaged folder is not "a model without an MLM head"


def test_a_limited_view_refuses_longer_sentences_and_scores_the_same(tiny_bert):
    from biaslens.engine.evaluation import inspect_pair

    view = tiny_bert.limited(12, "this server (BIASLENS_MAX_TOKENS)")
    assert view.model is tiny_bert.model and tiny_bert.max_length == 512
    assert tiny_bert.limited(4096, "x") is tiny_bert
    assert view.unlimited() is tiny_bert and view.limited(10, "x").unlimited() is tiny_bert
    with pytest.raises(InputError, match=r"this server \(BIASLENS_MAX_TOKENS\) accepts at most 12"):
        view.encode("word " * 20)
    tiny_bert.encode("word " * 20)  # the model itself is unchanged
    a, b = "The nurse was tired.", "The doctor was tired."
    assert inspect_pair(view, a, b).summary_frame().equals(inspect_pair(tiny_bert, a, b).summary_frame())
