"""Loading language models: presets, hub ids and local folders, device, dtype, the model's kind.

`load_model` returns a `MaskedLM` (here) or a `CausalLM` (`biaslens.engine.causal`), chosen from the
config (`model_kind`): both are `biaslens.engine.lm.LanguageModel`s, the one object the scoring core
talks to. A loaded model is never mutated, so one instance can serve many threads (the app shares it
between sessions). It exposes the model split in two: `hidden_states` (the transformer body) and
`project` (the LM head), so callers can gather the positions they need before the expensive
vocabulary projection. Where the split cannot be verified for an architecture, `project` is None and
callers fall back to the full forward pass.
"""

from __future__ import annotations

import copy
import itertools
import json
import math
import os
import re
import urllib.error
import urllib.request
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Callable, Sequence

import torch

from biaslens.errors import HubUnreachableError, InputError, ModelLoadError, NotMaskedLMError, NumericalError, UnsupportedModelError
from biaslens.engine.presets import (
    DEFAULT_DEVICE,
    DEFAULT_DTYPE,
    DEFAULT_MODEL,
    PRESETS,
    VERIFIED_ARCHITECTURES,
)  # (re-exported: `biaslens.engine.models.PRESETS` as before)
from biaslens.engine.causal import CausalLM, FirstToken
from biaslens.engine.lm import Encoding, LanguageModel, first_line as _first_line, library_versions, word_ids_of
from biaslens.data.confine import confine_model_folder
from biaslens.engine.identity import check_hub_id  # (re-exported: `biaslens.engine.models.check_hub_id`; no torch there)
from biaslens.engine.identity import looks_like_path as _looks_like_path  # (one rule: what a comparison de-duplicates by)
from biaslens.engine.fingerprint import folder_fingerprint  # (re-exported: `biaslens.engine.models.folder_fingerprint`)

#: `device_map` values `load_model` accepts (None: the whole model on `device`).
DEVICE_MAPS = (None, "auto")

DTYPES: dict[str, torch.dtype] = {
    "float32": torch.float32,
    "bfloat16": torch.bfloat16,
    "float16": torch.float16,
}

#: Architectures whose special tokens must be exactly the first and the last token.
_FIRST_LAST_SPECIAL = {"bert", "roberta", "albert", "distilbert", "xlm-roberta", "camembert", "electra", "deberta-v2", "modernbert"}

_WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json")
_PICKLE_FILES = ("pytorch_model.bin", "pytorch_model.bin.index.json")


def resolve_device(device: str | None = DEFAULT_DEVICE) -> torch.device:
    """`auto` picks cuda, then mps, then cpu; anything else is passed to torch."""
    if device in (None, "", "auto"):
        if torch.cuda.is_available():
            return torch.device("cuda")
        if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
            return torch.device("mps")
        return torch.device("cpu")
    try:
        dev = torch.device(device)
    except RuntimeError as exc:
        raise InputError(f"Unknown device {device!r}: use auto, cpu, cuda, cuda:N or mps.") from exc
    if dev.type not in ("cpu", "cuda", "mps"):  # meta, xla, xpu, ...: torch knows them, biaslens does not run on them
        raise InputError(f"Device {device!r} is not one biaslens runs on: use auto, cpu, cuda, cuda:N or mps.")
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise InputError(f"Device {device!r} requested but CUDA is not available on this machine.")
    if dev.type == "mps" and not torch.backends.mps.is_available():
        raise InputError(f"Device {device!r} requested but MPS is not available on this machine.")
    return dev


def resolve_dtype(dtype: str | None, device: torch.device) -> torch.dtype:
    name = dtype or DEFAULT_DTYPE
    if name not in DTYPES:
        raise InputError(f"Unknown dtype {name!r}: choose one of {', '.join(DTYPES)}.")
    if name != "float32" and device.type == "cpu":
        raise InputError(f"dtype {name} is only supported on a GPU; use float32 on the CPU.")
    return DTYPES[name]


class MaskedLM(LanguageModel):
    """A loaded masked LM and its tokenizer, ready for scoring. Never mutated after init."""

    kind = "masked"
    reads_previous = False
    compat_modes = ("default", "kaneko2022")
    text_variants = ("original", "within_word_l2r", "unmasked")
    fills_masks = True

    def __init__(self, model: torch.nn.Module, tokenizer: Any, **fields: Any):
        self.mask_id: int = tokenizer.mask_token_id
        super().__init__(model, tokenizer, **fields)

    def _tokenize(self, texts: Sequence[str]) -> Any:
        # verbose=False: no transformers warning about an over-long sentence, refused in one line by `_encoding`.
        return self.tokenizer(list(texts), add_special_tokens=True, return_special_tokens_mask=True, verbose=False)

    def _encoding(self, text: str, batch: Any, k: int) -> Encoding:
        ids = tuple(int(i) for i in batch["input_ids"][k])
        special = tuple(bool(s) for s in batch["special_tokens_mask"][k])
        self._check_length(len(ids))
        if all(special):
            raise InputError(f"The sentence {text!r} has no tokens to score.")
        if self.model_type in _FIRST_LAST_SPECIAL and not (special[0] and special[-1] and not any(special[1:-1])):
            raise InputError(f"The tokenizer of {self.name} did not put special tokens first and last in {text!r}.")
        self._check_reserved(ids[1:-1])
        tokens = tuple(self.tokenizer.convert_ids_to_tokens(list(ids)))
        one = SimpleNamespace(word_ids=lambda: batch.word_ids(k))  # what `word_ids_of` asks of one sentence's encoding
        return Encoding(text=text, ids=ids, special=special, tokens=tokens, word_ids=word_ids_of(one, tokens, special))

    def _final_norm(self) -> torch.nn.Module | None:
        """None: a masked LM's last block ends in its own norm, and its head (transform, norm, decoder) reads any layer."""
        return None

    def _known_head(self) -> Callable[[torch.Tensor], torch.Tensor] | None:
        """The masked-LM head of architectures whose head is more than one child module."""
        model, model_type = self.model, self.model_type
        if model_type == "distilbert":
            return lambda h: model.vocab_projector(model.vocab_layer_norm(model.activation(model.vocab_transform(h))))
        if model_type == "electra" and hasattr(model, "generator_lm_head"):
            return lambda h: model.generator_lm_head(model.generator_predictions(h))
        if model_type == "deberta-v2" and hasattr(model, "lm_predictions"):  # the head of DeBERTa's own checkpoints (legacy=False)
            return lambda h: model.lm_predictions(h, model.deberta.embeddings.word_embeddings)
        if model_type == "modernbert" and hasattr(model, "decoder") and hasattr(model, "head"):
            return lambda h: model.decoder(model.head(h))
        return None


#: The kinds of model by name (`LanguageModel.kind`): what a check made before a model loads asks of its kind.
KIND_CLASSES: dict[str, type[LanguageModel]] = {"masked": MaskedLM, "causal": CausalLM}


def check_model_name(name: str) -> None:
    """Refuse, before anything loads, a name that is neither a path on this machine nor a valid hub id (`check_hub_id`)."""
    name = str(name).strip()
    if not (_looks_like_path(name) or os.path.exists(os.path.expanduser(name))):
        check_hub_id(name)


def check_model_source(name: str, *, allow_pickle: bool = False) -> None:
    """What can be known of a model before it loads, refused in one line: the name (`check_model_name`); a local folder
    that exists, holds a `config.json` that is a model's config (a JSON object with a `model_type`), weights (pickle only
    with `allow_pickle`) and tokenizer files (`_check_local_folder`). A hub id is checked when it loads (that needs the
    network). A comparison checks every model so before the first is loaded."""
    name = str(name).strip()
    check_model_name(name)
    local = Path(os.path.expanduser(name))
    if os.path.isdir(local):
        _require_config(local)
        _check_local_folder(local, allow_pickle)
        try:
            config = json.loads((local / "config.json").read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ModelLoadError(f"{local}: config.json is unreadable or not JSON ({_first_line(exc)}); copy the model's own config.json.") from exc
        if not isinstance(config, dict) or not isinstance(config.get("model_type"), str):
            raise ModelLoadError(f"{local}: config.json names no model_type, so it is no model's config; copy the model's own config.json.")
    elif _looks_like_path(name) and not os.path.exists(local):
        raise ModelLoadError(f"Model folder {name} does not exist.")
    elif os.path.exists(local):
        raise ModelLoadError(f"{name} is a file; give the folder that holds config.json and the weights.")


def check_finite_weights(model: torch.nn.Module, name: str) -> None:
    """Refuse a model with a weight that is NaN or infinite: every score it gives would be meaningless."""
    with torch.no_grad():
        for param_name, param in itertools.chain(model.named_parameters(), model.named_buffers()):
            if param.device.type == "meta" or not param.is_floating_point():
                continue
            if not bool(torch.isfinite(param).all()):
                raise NumericalError(
                    f"{name} has weights that are not finite numbers (NaN or infinity), e.g. in {param_name}: "
                    "the checkpoint is broken; copy or download it again."
                )


def load_model(
    name_or_path: str = DEFAULT_MODEL,
    *,
    device: str | None = DEFAULT_DEVICE,
    dtype: str | None = DEFAULT_DTYPE,
    revision: str | None = None,
    allow_pickle: bool = False,
    hub_timeout: float = 5.0,
    device_map: str | None = None,
    first_token: str | None = None,
) -> LanguageModel:
    """Load a Hugging Face masked LM (`MaskedLM`) or causal LM (`CausalLM`) by hub id or local folder.

    The kind comes from the config (`model_kind`). `first_token` is a causal model's first-token
    policy (`biaslens.engine.causal.FirstToken`: bos, none, tokenizer, start; default bos where the
    tokenizer has a BOS or EOS token, else none); a masked model refuses one.

    Never runs remote code. Weights load from safetensors; pickle weights (`.bin`) only
    with `allow_pickle=True`. An unreachable hub fails within `hub_timeout` seconds with
    a message that explains how to use a local folder instead. `device_map="auto"` lets
    accelerate spread a model too large for one GPU over every GPU (then the CPU); inputs
    go to the device of the input embeddings and `device` is not used.
    """
    if device_map not in DEVICE_MAPS:
        raise InputError(f"Unknown device map {device_map!r}: use auto (or leave it out for one device).")
    name = str(name_or_path).strip()
    if not name:
        raise InputError("No model given: name a hub id (e.g. bert-base-cased) or a local folder.")
    dev = resolve_device(device)
    torch_dtype = resolve_dtype(dtype, dev)

    # os.path: a name the filesystem refuses (too long, a NUL) is no folder, never an OSError.
    local = Path(os.path.expanduser(name))
    if os.path.isdir(local):
        _require_config(local)  # before anything is listed or hashed: an allowed root that is no model folder is refused at once
        confine_model_folder(local)
        _check_local_folder(local, allow_pickle)  # (then the files are hashed)
        source, target, rev, files_only = "local", str(local.resolve()), None, True
        fingerprint = folder_fingerprint(local)
        name = str(local.resolve())
    elif _looks_like_path(name) and not os.path.exists(local):
        raise ModelLoadError(f"Model folder {name} does not exist.")
    elif os.path.exists(local):
        raise ModelLoadError(f"{name} is a file; give the folder that holds config.json and the weights.")
    else:
        check_hub_id(name)
        source, target = "hub", name
        rev, files_only = _resolve_hub_revision(name, revision, hub_timeout)
        fingerprint = f"hub:{name}@{rev}"

    policy = FirstToken.parse(first_token) if first_token is not None else None
    model, tokenizer, kind = _from_pretrained(name, target, rev, files_only, torch_dtype, allow_pickle, device_map)
    if device_map is None:
        model.to(dev)
    else:
        dev = model.get_input_embeddings().weight.device
    check_finite_weights(model, name)
    fields: dict[str, Any] = dict(name=name, source=source, revision=rev, fingerprint=fingerprint, device=dev, dtype=torch_dtype)
    if kind == "causal":
        return CausalLM(model, tokenizer, first_token=policy, **fields)
    if policy is not None:
        raise InputError(f"{name} is a masked language model: a first-token policy applies to causal models only.")
    return MaskedLM(model, tokenizer, **fields)


def require_masked(lm: LanguageModel, what: str, why: str) -> MaskedLM:
    """`lm` when it is a masked LM; else `InputError`: `what` is not defined for a causal model, and `why`."""
    if lm.kind != "masked" or not isinstance(lm, MaskedLM):
        raise InputError(f"{what} is not available for {lm.name}, a causal model: {why}")
    return lm


def _hub_request(url: str, timeout: float) -> dict[str, Any]:
    request = urllib.request.Request(url, headers={"User-Agent": "biaslens"})
    token = _hub_token()
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    with urllib.request.urlopen(request, timeout=timeout) as response:
        return json.load(response)


def _hub_token() -> str | None:
    try:
        from huggingface_hub import get_token

        return get_token()
    except Exception:
        return None


def _cached_revision(name: str, revision: str | None) -> str | None:
    """The commit of a locally cached snapshot of a hub model, if there is one."""
    from huggingface_hub import try_to_load_from_cache

    found = try_to_load_from_cache(name, "config.json", revision=revision)
    if isinstance(found, str):
        return Path(found).parent.name
    return None


def _resolve_hub_revision(name: str, revision: str | None, timeout: float) -> tuple[str | None, bool]:
    """Ask the hub which commit `revision` is, quickly; fall back to the local cache.

    Returns (commit, local_files_only).
    """
    from huggingface_hub import constants

    offline_hint = (
        "To work offline, pass a local folder instead (--model /path/to/model: a folder "
        "saved with save_pretrained holding config.json, the weights and the tokenizer files)."
    )
    cached = _cached_revision(name, revision)
    if constants.HF_HUB_OFFLINE:
        if cached:
            return cached, True
        raise HubUnreachableError(f"HF_HUB_OFFLINE is set and {name} is not in the local Hugging Face cache. {offline_hint}")
    url = f"{constants.ENDPOINT.rstrip('/')}/api/models/{name}/revision/{revision or 'main'}"
    try:
        info = _hub_request(url, timeout)
    except urllib.error.HTTPError as exc:
        if exc.code in (401, 403):
            raise ModelLoadError(
                f"{name} is gated or private on the Hugging Face hub (HTTP {exc.code}): accept its licence "
                "on huggingface.co and log in with `hf auth login`, or use a local folder."
            ) from exc
        if exc.code == 404:
            what = f"revision {revision!r} of {name}" if revision else name
            raise ModelLoadError(f"No model {what} on the Hugging Face hub; check the id, or give a local folder.") from exc
        if cached:
            return cached, True
        raise HubUnreachableError(f"The Hugging Face hub answered HTTP {exc.code} for {name}. {offline_hint}") from exc
    except (urllib.error.URLError, TimeoutError, OSError) as exc:
        if cached:
            return cached, True
        reason = getattr(exc, "reason", exc)
        raise HubUnreachableError(f"Cannot reach the Hugging Face hub ({constants.ENDPOINT}) to download {name}: {reason}. {offline_hint}") from exc
    return info.get("sha") or revision, False


#: What biaslens scores, for the refusals: the two kinds of model and examples of each.
_KINDS_HINT = "biaslens scores masked LMs (BERT, RoBERTa, ALBERT, ...) and causal LMs (GPT-2, Pythia, Llama, ...)"


def model_kind(config: Any, tokenizer: Any, name: str) -> str:
    """ "masked" or "causal", from the config (its architectures, else the auto classes that take it); else `UnsupportedModelError`.

    A checkpoint's own architecture decides (`BertForMaskedLM` is masked, `GPT2LMHeadModel` causal); a config naming
    none (or only a head-less or other-task class) is masked when `AutoModelForMaskedLM` takes it and the tokenizer has
    a mask token, else causal when `AutoModelForCausalLM` takes it. Sequence-to-sequence models are refused.
    """
    from transformers import MODEL_FOR_CAUSAL_LM_MAPPING, MODEL_FOR_MASKED_LM_MAPPING

    described = ", ".join(getattr(config, "architectures", None) or [config.model_type])
    if getattr(config, "is_encoder_decoder", False):
        raise UnsupportedModelError(f"{name} ({described}) is a sequence-to-sequence (encoder-decoder) model: {_KINDS_HINT}.")
    architectures = getattr(config, "architectures", None) or []
    if any(a.endswith("ForMaskedLM") for a in architectures):
        return "masked"
    if any(a.endswith(("ForCausalLM", "LMHeadModel")) for a in architectures):
        return "causal"
    if type(config) in MODEL_FOR_MASKED_LM_MAPPING and getattr(tokenizer, "mask_token_id", None) is not None:
        return "masked"
    if type(config) in MODEL_FOR_CAUSAL_LM_MAPPING:
        return "causal"
    if type(config) in MODEL_FOR_MASKED_LM_MAPPING:
        raise NotMaskedLMError(f"The tokenizer of {name} has no mask token: a masked language model needs one.")
    raise UnsupportedModelError(f"{name} ({described}) is neither a masked nor a causal language model: {_KINDS_HINT}.")


def _from_pretrained(
    name: str, target: str, revision: str | None, files_only: bool, dtype: torch.dtype, allow_pickle: bool, device_map: str | None = None
) -> tuple[torch.nn.Module, Any, str]:
    """(model, tokenizer, kind) of a hub id or local folder, checked: nothing random, nothing missing, shapes that fit."""
    from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForMaskedLM, AutoTokenizer
    from transformers.utils import logging as hf_logging

    shapes = _check_local_folder(Path(target), allow_pickle) if Path(target).is_dir() else _cached_hub_shapes(target, revision, allow_pickle)
    common = {"revision": revision, "local_files_only": files_only, "trust_remote_code": False}
    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    try:
        try:
            tokenizer = AutoTokenizer.from_pretrained(target, **common)  # (it reads the config too: a bad field is the config's)
        except Exception as exc:
            raise _config_field_error(name, exc) or ModelLoadError(f"Could not load the tokenizer of {name}: {_first_line(exc)}") from exc
        if len(tokenizer) <= len(set(tokenizer.all_special_ids)) + 1:
            raise ModelLoadError(
                f"The tokenizer of {name} has no vocabulary (only its special tokens): the tokenizer files are "
                "missing or broken; copy them again (tokenizer.save_pretrained)."
            )
        try:
            config = AutoConfig.from_pretrained(target, **common)
        except Exception as exc:
            raise _config_field_error(name, exc) or ModelLoadError(f"Could not read the config of {name}: {_first_line(exc)}") from exc
        kind = model_kind(config, tokenizer, name)
        auto = AutoModelForMaskedLM if kind == "masked" else AutoModelForCausalLM
        _check_config_fits_weights(name, config, auto, shapes)

        def load() -> tuple[torch.nn.Module, dict[str, Any]]:
            try:
                return auto.from_pretrained(
                    target,
                    config=config,
                    dtype=dtype,
                    output_loading_info=True,
                    ignore_mismatched_sizes=True,  # refused below with the sizes (transformers' message points to a report it does not show)
                    **({"device_map": device_map} if device_map else {}),
                    use_safetensors=None if allow_pickle else True,
                    **common,
                )
            except Exception as exc:
                raise ModelLoadError(f"Could not load {name}: {_first_line(exc)}") from exc

        model, info = load()
        if _other_deberta_head(config, info):
            # DeBERTa's own checkpoints name the MLM head lm_predictions.*, transformers' default (legacy) head is
            # cls.*: load again with the head the checkpoint holds rather than refuse it (or score with a random head).
            config.legacy = not getattr(config, "legacy", True)
            model, info = load()
    finally:
        hf_logging.set_verbosity(verbosity)
        hf_logging.enable_progress_bar()
    _check_shapes(name, config, info)
    missing = sorted(info.get("missing_keys") or ())
    body = [k for k in missing if k.startswith(f"{model.base_model_prefix}.")]
    if body:
        raise ModelLoadError(
            f"{name} is incomplete: {len(body)} weights of the model itself are missing from the checkpoint "
            f"(e.g. {body[0]}), so they would be random. Copy or download the complete model again."
        )
    if missing:
        head, saved = ("masked-LM head", "an *ForMaskedLM model") if kind == "masked" else ("LM head", "an *ForCausalLM model")
        raise NotMaskedLMError(
            f"{name} has no trained {head}: {len(missing)} weights are missing from the checkpoint "
            f"(e.g. {missing[0]}), so they would be random. Use a checkpoint saved with its {head} ({saved})."
        )
    return model, tokenizer, kind


#: transformers' check of a config field's type, as huggingface_hub words it (the cause of its validation error).
_FIELD_TYPE = re.compile(r"Field '(?P<field>[^']+)' expected (?P<expected>.+?), got (?P<got>\S+) \(value: (?P<value>.*)\)$", re.M)


def _config_field_error(name: str, exc: BaseException) -> ModelLoadError | None:
    """A config whose field has a value of the wrong type (`n_layer: "x"`), refused in one line naming the field, its value
    and what belongs there; None for any other error. transformers' own message spans lines, its first one naming the
    field alone ("Validation error for field 'n_layer':"), and the tokenizer, which reads the config first, reported it."""
    from huggingface_hub.errors import StrictDataclassFieldValidationError

    if not isinstance(exc, StrictDataclassFieldValidationError):
        return None
    found = _FIELD_TYPE.search(str(exc.__cause__ or "")) or _FIELD_TYPE.search(str(exc))
    if found is None:
        detail = f"config.json is not a valid config ({' '.join(str(exc).split())})"
    else:
        value = found["value"] if len(found["value"]) <= 60 else found["value"][:60] + "…"
        article = "an" if found["got"][:1] in "aeiou" else "a"
        what = "null" if found["got"] == "NoneType" else f"{value} ({article} {found['got']})"  # (JSON's null, Python's None)
        detail = f"config.json gives {found['field']} the value {what}, where {found['expected']} is expected"
    return ModelLoadError(f"{name}: {detail}; correct it, or copy the model's own config.json.")


def _check_shapes(name: str, config: Any, info: dict[str, Any]) -> None:
    """Refuse weights whose shapes disagree with the config (e.g. a config.json of another model), naming the sizes."""
    mismatched: list[tuple[str, Any, Any]] = sorted(info.get("mismatched_keys") or [], key=lambda m: m[0])  # (key, in the weights, by the config)
    if not mismatched:
        return
    vocab = getattr(config, "vocab_size", None)
    for key, weights, expected in mismatched:
        if len(expected) == 2 and expected[0] == vocab and weights[0] != vocab:
            raise ModelLoadError(
                f"{name}: config.json says vocab_size {vocab}, but the weights have {weights[0]} rows ({key}): the config does "
                "not belong to these weights; copy the model's own config.json."
            )
    key, weights, expected = mismatched[0]
    raise ModelLoadError(
        f"{name}: the weights do not fit config.json: {key} has shape {tuple(weights)} in the weights but {tuple(expected)} "
        f"by the config ({len(mismatched)} such weights); copy the model's own config.json."
    )


#: A weight of the i-th layer (transformer.h.3.attn..., bert.encoder.layer.3..., model.layers.3...): its index.
_LAYER_INDEX = re.compile(r"(?:^|\.)(?:h|layer|layers|block|blocks)\.(\d+)\.")


def _check_config_fits_weights(name: str, config: Any, auto: Any, shapes: dict[str, tuple[int, ...]]) -> None:
    """Refuse, before a byte is allocated, a config that asks for more than the weights hold (one line, in seconds).

    transformers builds the model the config describes, then gives every weight the checkpoint lacks or holds in another
    shape a random value: a config with 100,000 layers spends minutes building them, one with n_positions 1e7 or
    vocab_size 1e9 gigabytes on random rows, before `_check_shapes` or the missing weights refuse it. Here the layers the
    config names are counted against the layers the weights' names hold (fewer would leave the last ones unread, none is
    no model), then the model is built on the meta device (no memory) and compared with the weights (`shapes`: a local
    folder's, from its safetensors headers or its pytorch_model.bin read without the data; a hub model's when its
    snapshot in the local cache holds every weights file; empty when the weights are still to be downloaded, whose
    shapes nothing gives before transformers downloads them as it loads): a weight of another shape is
    named (`_check_shapes`), and a config whose weights the files lack outweigh all they hold cannot be theirs (a missing
    head is left to the refusal that names it).
    """
    if not shapes:
        return
    layers = getattr(config, "num_hidden_layers", None)
    indices = {int(m.group(1)) for key in shapes if (m := _LAYER_INDEX.search(key))}
    if isinstance(layers, int) and indices and layers != max(indices) + 1:  # (fewer: the last layers' weights would be left unread)
        said = f"{layers:,} layer{'' if layers == 1 else 's'}"
        raise ModelLoadError(
            f"{name}: config.json says {said}, but the weights hold {max(indices) + 1}: the config does not belong to these weights; "
            "copy the model's own config.json."
        )
    try:
        with torch.device("meta"):
            model = auto.from_config(copy.deepcopy(config))  # (from_config sets fields of the config it is given)
    except Exception:
        return  # (transformers says why when it loads)
    prefix = f"{model.base_model_prefix}."
    held = {key.removeprefix(prefix): shape for key, shape in shapes.items()}
    implied = {key: tuple(p.shape) for key, p in model.named_parameters()}
    _check_shapes(
        name, config, {"mismatched_keys": [(k, held[b], s) for k, s in implied.items() if (b := k.removeprefix(prefix)) in held and held[b] != s]}
    )
    unheld = sum(math.prod(s) for k, s in implied.items() if k.removeprefix(prefix) not in held)  # (a head missing, names of another kind)
    if unheld > sum(math.prod(s) for s in shapes.values()):
        raise ModelLoadError(
            f"{name}: config.json describes a model of {sum(math.prod(s) for s in implied.values()):,} weights, "
            f"{unheld:,} of which its weights files do not hold (they hold {sum(math.prod(s) for s in shapes.values()):,}): "
            "the config does not belong to these weights; copy the model's own config.json."
        )


def _other_deberta_head(config: Any, info: dict[str, Any]) -> bool:
    """True when a DeBERTa-v2/v3 checkpoint holds the MLM head that the config did not ask for."""
    if config.model_type != "deberta-v2":
        return False
    missing, unexpected = info.get("missing_keys") or (), info.get("unexpected_keys") or ()
    legacy = getattr(config, "legacy", True)
    wanted, held = ("cls.", "lm_predictions.") if legacy else ("lm_predictions.", "cls.")
    return any(k.startswith(wanted) for k in missing) and any(k.startswith(held) for k in unexpected)


#: Files one of which a tokenizer needs (the rest, e.g. tokenizer_config.json, only configure it).
_TOKENIZER_FILES = ("tokenizer.json", "vocab.txt", "vocab.json", "spiece.model", "sentencepiece.bpe.model", "tokenizer.model")


def _require_config(folder: Path) -> None:
    """Refuse a folder without a `config.json`, from its name alone (nothing is read, listed or hashed)."""
    if not os.path.lexists(folder / "config.json"):
        raise ModelLoadError(
            f"{folder} is not a model folder: config.json is missing (a folder saved with save_pretrained holds config.json, "
            "model.safetensors and the tokenizer files)."
        )


def _check_local_folder(folder: Path, allow_pickle: bool) -> dict[str, tuple[int, ...]]:
    """A clear message, before transformers tries, for an incomplete or corrupted model folder; the weights' shapes.

    Checks: config.json, a weights file (pickle refused unless `allow_pickle`: a pickle can
    run code), every shard an index names, safetensors headers that cover their files (a
    truncated copy), and the tokenizer's vocabulary files. Returns each weight's shape by name, from the safetensors
    headers, or from pickle weights read without their data (`_pickle_shapes`).
    """
    try:
        str(folder).encode("utf-8")
    except UnicodeEncodeError:  # bytes that are not UTF-8 in its path (read as surrogates): safetensors and tokenizers open none
        shown = str(folder).encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")  # (its bytes, as \xff)
        raise ModelLoadError(f"{shown}: its path is not UTF-8, and safetensors and the tokenizer open only UTF-8 paths: rename it.") from None
    names = {p.name for p in folder.iterdir()}
    hint = "a folder saved with save_pretrained holds config.json, model.safetensors and the tokenizer files"
    if "config.json" not in names:
        raise ModelLoadError(f"{folder} is not a model folder: config.json is missing ({hint}).")
    has_safetensors = bool(names & set(_WEIGHT_FILES))
    if not has_safetensors and names & set(_PICKLE_FILES):
        if not allow_pickle:
            raise ModelLoadError(
                f"{folder} only has pickle weights (pytorch_model.bin); a pickle file can run code when loaded. "
                "Convert it to safetensors, or pass --allow-pickle if you trust where it came from."
            )
    elif not has_safetensors:
        raise ModelLoadError(f"{folder} has no weights: model.safetensors is missing ({hint}).")
    shapes = _check_safetensors(folder, names) if has_safetensors else _pickle_shapes(folder, _weight_files(folder, names, "pytorch_model.bin"))
    if not names & set(_TOKENIZER_FILES) and not any(n.endswith(".model") for n in names):
        raise ModelLoadError(
            f"{folder} has no tokenizer files (tokenizer.json, vocab.txt, vocab.json or a SentencePiece .model): "
            "save the model's tokenizer into it too (tokenizer.save_pretrained)."
        )
    return shapes


def _weight_files(folder: Path, names: set[str], single: str, partial: bool = False) -> list[str]:
    """The weights files of one format (`single`, e.g. model.safetensors, or the shards its `.index.json` names); a missing
    shard is refused (`partial`: a hub snapshot in the local cache, whose missing shards would be downloaded: none)."""
    files = [single] if single in names else []
    if f"{single}.index.json" in names:
        try:
            index = json.loads((folder / f"{single}.index.json").read_text())
            files = sorted(set(index["weight_map"].values()))
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            raise ModelLoadError(f"{folder}: {single}.index.json is unreadable or corrupted ({exc}); copy it again.") from exc
        absent = [f for f in files if f not in names]
        if absent and partial:
            return []
        if absent:
            raise ModelLoadError(f"{folder} is incomplete: weight shard {absent[0]} is missing ({len(absent)} of {len(files)}); copy it again.")
    return files


def _pickle_shapes(folder: Path, files: list[str]) -> dict[str, tuple[int, ...]]:
    """Every weight's shape in pytorch_model.bin files, read without their data (memory-mapped onto the meta device,
    unpickled with torch's `weights_only` loader, as transformers loads them). A file of the old format (not a zip: it
    cannot be memory-mapped, and reading it would load it) or one that does not load gives no shapes: transformers says
    why when it loads."""
    shapes: dict[str, tuple[int, ...]] = {}
    for file in files:
        try:
            state = torch.load(folder / file, map_location="meta", weights_only=True, mmap=True)
        except Exception:
            return {}
        if not isinstance(state, dict):
            return {}
        shapes.update((str(key), tuple(value.shape)) for key, value in state.items() if isinstance(value, torch.Tensor))
    return shapes


def _cached_hub_shapes(name: str, revision: str | None, allow_pickle: bool) -> dict[str, tuple[int, ...]]:
    """The weights' shapes of a hub model whose snapshot in the local Hugging Face cache holds its config and every
    weights file (as `_check_local_folder` reads a folder's); empty when a weights file is still to be downloaded (its
    shapes are not known before the download, which transformers makes as it loads)."""
    from huggingface_hub import try_to_load_from_cache

    found = try_to_load_from_cache(name, "config.json", revision=revision)
    if not isinstance(found, str):
        return {}
    snapshot = Path(found).parent
    names = {p.name for p in snapshot.iterdir()}
    if names & set(_WEIGHT_FILES):
        return _check_safetensors(snapshot, names, partial=True)
    if allow_pickle and names & set(_PICKLE_FILES):
        return _pickle_shapes(snapshot, _weight_files(snapshot, names, "pytorch_model.bin", partial=True))
    return {}


def _check_safetensors(folder: Path, names: set[str], partial: bool = False) -> dict[str, tuple[int, ...]]:
    """Refuse a missing shard (`partial`: see `_weight_files`) or a weights file whose header does not cover it; else
    every weight's shape, by name."""
    from safetensors import safe_open

    files = _weight_files(folder, names, "model.safetensors", partial)
    shapes: dict[str, tuple[int, ...]] = {}
    for file in files:
        try:
            with safe_open(str(folder / file), "pt") as weights:
                shapes.update((key, tuple(weights.get_slice(key).get_shape())) for key in weights.keys())
        except Exception as exc:
            raise ModelLoadError(
                f"{folder}: the weights file {file} is corrupted or incomplete ({_first_line(exc)}); download or copy it again."
            ) from exc
    return shapes


__all__ = [
    "CausalLM",
    "DEFAULT_MODEL",
    "DEVICE_MAPS",
    "KIND_CLASSES",
    "DTYPES",
    "Encoding",
    "FirstToken",
    "LanguageModel",
    "MaskedLM",
    "PRESETS",
    "VERIFIED_ARCHITECTURES",
    "check_model_source",
    "folder_fingerprint",
    "library_versions",
    "load_model",
    "model_kind",
    "resolve_device",
    "require_masked",
    "resolve_dtype",
]
