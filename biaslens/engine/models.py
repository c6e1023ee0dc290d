"""Loading masked language models: presets, hub ids and local folders, device, dtype, manifest.

`load_model` returns a `MaskedLM`, the one object the scoring core talks to. It is never
mutated after loading, so one instance can serve many threads (the app shares it between
sessions). It exposes the model split in two: `hidden_states` (the transformer body) and
`project` (the masked-LM head), so callers can gather the positions they need before the
expensive vocabulary projection. Where the split cannot be verified for an architecture,
`project` is None and callers fall back to the full forward pass.
"""

from __future__ import annotations

import copy
import functools
import itertools
import json
import os
import platform
import threading
import urllib.error
import urllib.request
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Callable, Sequence

import numpy as np
import torch

from biaslens.errors import HubUnreachableError, InputError, MetricUnavailableError, ModelLoadError, NotMaskedLMError, NumericalError
from biaslens.engine.presets import (
    DEFAULT_DEVICE,
    DEFAULT_DTYPE,
    DEFAULT_MODEL,
    PRESETS,
    VERIFIED_ARCHITECTURES,
)  # (re-exported: `biaslens.engine.models.PRESETS` as before)
from biaslens.data.sentences import check_sentence
from biaslens.data.confine import confine_model_folder
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


@dataclass(frozen=True)
class Encoding:
    """A sentence tokenized with the model's own tokenizer, special tokens included."""

    text: str
    ids: tuple[int, ...]
    special: tuple[bool, ...]
    tokens: tuple[str, ...]
    # Per position, the index of the word the token belongs to (-1 for special tokens): the tokenizer's own
    # word boundaries (`word_ids`), else read from the pieces' markers. Empty when unknown.
    word_ids: tuple[int, ...] = ()

    def __len__(self) -> int:
        return len(self.ids)

    @functools.cached_property
    def scored_positions(self) -> np.ndarray:
        """Positions of the non-special tokens (the ones every metric scores); computed once per encoding, read-only."""
        positions = np.flatnonzero(~np.asarray(self.special, dtype=bool))
        positions.flags.writeable = False
        return positions


def word_ids_of(enc: Any, tokens: Sequence[str], special: Sequence[bool]) -> tuple[int, ...]:
    """The word index of every position (-1 for special tokens).

    A fast tokenizer's `word_ids()` (its pre-tokenizer's words: BERT splits off punctuation, sentencepiece
    splits on spaces only). A slow one's from the piece markers: "##" continues a word (WordPiece); a
    piece starting with "▁" or "Ġ" starts one, any other continues the previous one (sentencepiece, byte BPE).
    """
    words = None
    try:
        words = enc.word_ids()
    except (AttributeError, ValueError, TypeError):
        words = None
    if words is not None and len(words) == len(tokens):
        out, seen = [], {}
        for w, is_special in zip(words, special):
            out.append(-1 if w is None or is_special else seen.setdefault(w, len(seen)))
        return tuple(out)
    wordpiece = any(t.startswith("##") for t in tokens)
    out, current = [], -1
    for token, is_special in zip(tokens, special):
        if is_special:
            out.append(-1)
            continue
        starts = not token.startswith("##") if wordpiece else token.startswith(("\u2581", "\u0120")) or current < 0
        current += 1 if starts or current < 0 else 0
        out.append(current)
    return tuple(out)


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


def library_versions() -> dict[str, str]:
    versions = {"python": platform.python_version(), "platform": platform.platform()}
    for package in ("biaslens", "torch", "transformers", "tokenizers", "huggingface_hub", "numpy"):
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = _own_version() if package == "biaslens" else "not installed"
    return versions


def _own_version() -> str:
    from biaslens.version import __version__

    return __version__


class MaskedLM:
    """A loaded masked LM and its tokenizer, ready for scoring. Never mutated after init."""

    def __init__(
        self,
        model: torch.nn.Module,
        tokenizer: Any,
        *,
        name: str,
        source: str,
        revision: str | None,
        fingerprint: str,
        device: torch.device,
        dtype: torch.dtype,
    ):
        self.model = model.eval()
        self.tokenizer = tokenizer
        self.name = name
        self.source = source  # "hub" or "local"
        self.revision = revision
        self.fingerprint = fingerprint
        self.device = device
        self.dtype = dtype
        self.model_type: str = getattr(model.config, "model_type", "unknown")
        self.mask_id: int = tokenizer.mask_token_id
        self.pad_id: int = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
        self.max_length = _max_length(model.config, tokenizer)
        #: Who set `max_length` below the model's own limit (see `limited`); None = the model.
        self.length_limit: str | None = None
        # Special tokens typed into a sentence ([MASK], <s>, ...); [UNK] is legitimate.
        self._reserved_ids = frozenset(tokenizer.all_special_ids) - {tokenizer.unk_token_id}
        self.num_layers = getattr(model.config, "num_hidden_layers", None)
        self.num_heads = getattr(model.config, "num_attention_heads", None)
        self._eager: torch.nn.Module | None = None
        self._eager_lock = threading.Lock()
        self.project: Callable[[torch.Tensor], torch.Tensor] | None = self._verified_head()
        #: Why this model cannot return attention weights (so AULA and the attention views are off), or None.
        self.attention_unavailable: str | None = self._attention_support()
        #: False for an architecture whose outputs change when a sentence is padded (it ignores the attention
        #: mask, e.g. FNet): the scoring core then batches only sentences of one length.
        self.padding_invariant: bool = self._padding_invariant()

    # -- tokenization -------------------------------------------------------------------
    def encode(self, text: str) -> Encoding:
        """Tokenize one sentence. Refuses empty and over-long sentences (no silent truncation) and control characters."""
        return self.encode_many([text])[0]

    def encode_many(self, texts: Sequence[str]) -> list[Encoding]:
        """`encode` for several sentences, tokenized in one call of the tokenizer (a fast tokenizer works through them at once).

        The first sentence `encode` refuses is refused, in the same words.
        """
        for text in texts:
            check_sentence(text)
        # verbose=False: no transformers warning about an over-long sentence, refused below in one line.
        batch = self.tokenizer(list(texts), add_special_tokens=True, return_special_tokens_mask=True, verbose=False)
        return [self._encoding(text, batch, k) for k, text in enumerate(texts)]

    def _encoding(self, text: str, batch: Any, k: int) -> Encoding:
        """The `Encoding` of `text`, the `k`-th sentence of a tokenizer's `batch`, checked."""
        ids = tuple(int(i) for i in batch["input_ids"][k])
        special = tuple(bool(s) for s in batch["special_tokens_mask"][k])
        if len(ids) > self.max_length:
            who = self.length_limit or self.name
            raise InputError(
                f"The sentence has {len(ids)} tokens; {who} accepts at most {self.max_length} "
                f"(special tokens included). Shorten it: biaslens never truncates a scored sentence."
            )
        if all(special):
            raise InputError(f"The sentence {text!r} has no tokens to score.")
        if self.model_type in _FIRST_LAST_SPECIAL and not (special[0] and special[-1] and not any(special[1:-1])):
            raise InputError(f"The tokenizer of {self.name} did not put special tokens first and last in {text!r}.")
        typed = sorted({self.decode_token(i) for i in ids[1:-1] if i in self._reserved_ids})
        if typed:
            raise InputError(f"The sentence contains the tokenizer's reserved token {', '.join(typed)}; remove it.")
        tokens = tuple(self.tokenizer.convert_ids_to_tokens(list(ids)))
        one = SimpleNamespace(word_ids=lambda: batch.word_ids(k))  # what `word_ids_of` asks of one sentence's encoding
        return Encoding(text=text, ids=ids, special=special, tokens=tokens, word_ids=word_ids_of(one, tokens, special))

    def limited(self, max_tokens: int, who: str) -> "MaskedLM":
        """This model refusing sentences longer than `max_tokens` (e.g. a server's limit).

        A shallow copy sharing the weights and the tokenizer; `who` names the limit in the
        refusal ("this server (BIASLENS_MAX_TOKENS)"). Scores do not change.
        """
        if max_tokens >= self.max_length:
            return self
        view = copy.copy(self)
        view.max_length = int(max_tokens)
        view.length_limit = who
        view._unlimited = self.unlimited()
        return view

    def unlimited(self) -> "MaskedLM":
        """The model with its own length limit (itself unless this is a `limited` view)."""
        return self.__dict__.get("_unlimited", self)

    def decode_token(self, token_id: int) -> str:
        return self.tokenizer.convert_ids_to_tokens(int(token_id))

    # -- the two halves of the model ----------------------------------------------------
    def hidden_states(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor, *, attentions: bool = False
    ) -> tuple[torch.Tensor, tuple[torch.Tensor, ...] | None]:
        """Last hidden states (B, L, H) and, if asked, the per-layer attention probabilities."""
        self._check_attentions(attentions)
        model = self._eager_model() if attentions else self.model
        out = model.base_model(input_ids=input_ids, attention_mask=attention_mask, output_attentions=attentions)
        return out.last_hidden_state, (tuple(out.attentions) if attentions else None)

    def logits(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor, *, attentions: bool = False
    ) -> tuple[torch.Tensor, tuple[torch.Tensor, ...] | None]:
        """Full forward pass (B, L, V): the fallback when the head cannot be split off."""
        self._check_attentions(attentions)
        model = self._eager_model() if attentions else self.model
        out = model(input_ids=input_ids, attention_mask=attention_mask, output_attentions=attentions)
        return out.logits, (tuple(out.attentions) if attentions else None)

    def _check_attentions(self, attentions: bool) -> None:
        if attentions and self.attention_unavailable:
            raise MetricUnavailableError(self.attention_unavailable)

    def _eager_model(self) -> torch.nn.Module:
        """A twin of the model that shares every weight but uses eager attention.

        transformers' default SDPA attention returns no attention weights; switching the
        shared model would mutate it under concurrent users, so a twin is made once.
        """
        if self.model.config._attn_implementation == "eager":
            return self.model
        with self._eager_lock:
            if self._eager is None:
                shared = {id(t): t for t in (*self.model.parameters(), *self.model.buffers())}
                twin = copy.deepcopy(self.model, memo=shared)
                twin.set_attn_implementation("eager")
                self._eager = twin.eval()
            return self._eager

    def _probe_ids(self) -> torch.Tensor:
        """A short sentence (1, L) on the model's device: what the load-time checks run on."""
        return self.tokenizer("The quick brown fox jumps.", return_tensors="pt")["input_ids"].to(self.device)

    def _verified_head(self) -> Callable[[torch.Tensor], torch.Tensor] | None:
        """Find the masked-LM head and check that head(body(x)) equals the full model."""
        model = self.model
        base = model.base_model
        head = _known_head(model, self.model_type)
        if head is None:
            parts = [m for m in model.children() if m is not base and any(True for _ in m.parameters())]
            if len(parts) != 1:
                return None
            head = parts[0]
        probe = self._probe_ids()
        mask = torch.ones_like(probe)
        with torch.inference_mode():
            try:
                split = head(base(input_ids=probe, attention_mask=mask).last_hidden_state)
                full = model(input_ids=probe, attention_mask=mask).logits
            except Exception:  # an architecture whose head needs more than hidden states
                return None
        if split.shape != full.shape or not torch.allclose(split.float(), full.float(), atol=1e-4, rtol=1e-4):
            return None
        return head

    def _padding_invariant(self) -> bool:
        """Whether a probe sentence gets the same hidden states alone and right-padded with masked-out pads."""
        probe = self._probe_ids()
        n = probe.shape[1]
        padded = torch.cat([probe, torch.full((1, 5), self.pad_id, dtype=probe.dtype, device=probe.device)], dim=1)
        mask = (torch.arange(n + 5, device=probe.device) < n).long()[None, :]
        with torch.inference_mode():
            try:
                alone = self.model.base_model(input_ids=probe, attention_mask=torch.ones_like(probe)).last_hidden_state
                within = self.model.base_model(input_ids=padded, attention_mask=mask).last_hidden_state[:, :n]
            except Exception:
                return False
        tol = 1e-4 if self.dtype == torch.float32 else 5e-2  # half precision: kernels for other lengths round differently
        return bool(torch.allclose(alone.float(), within.float(), atol=tol, rtol=tol))

    def _attention_support(self) -> str | None:
        """None when the model returns per-layer attention weights (with eager attention), else why it does not.

        Checked once at load on a short probe: the eager twin must give one (1, heads, L, L) tensor per layer.
        An architecture without attention weights (e.g. FNet, which mixes tokens by Fourier transforms) or one
        that cannot run eager attention gets AULA and the attention views switched off, with this reason.
        """
        what = f"{self.name} ({self.model_type})"
        tail = "so AULA (which weights each token by the attention it receives) and the attention views are off for it"
        probe = self._probe_ids()
        try:
            eager = self._eager_model()
        except Exception as exc:
            return f"{what} cannot run eager attention, which attention weights need ({_first_line(exc)}), {tail}."
        with torch.inference_mode():
            try:
                out = eager.base_model(input_ids=probe, attention_mask=torch.ones_like(probe), output_attentions=True)
            except Exception as exc:
                return f"{what} cannot return attention weights ({_first_line(exc)}), {tail}."
        att = getattr(out, "attentions", None)
        n = probe.shape[1]
        if not att or any(a is None or a.dim() != 4 or tuple(a.shape[-2:]) != (n, n) for a in att):
            return f"{what} returns no attention weights (its architecture has no attention layers that report them), {tail}."
        return None

    # -- provenance ---------------------------------------------------------------------
    def manifest(self, **extra: Any) -> dict[str, Any]:
        """What produced a result: recorded next to every score biaslens writes."""
        return {
            "model": self.name,
            "source": self.source,
            "revision": self.revision,
            "fingerprint": self.fingerprint,
            "model_type": self.model_type,
            "dtype": str(self.dtype).removeprefix("torch."),
            "device": str(self.device),
            **({"device_map": _placement(self.model)} if getattr(self.model, "hf_device_map", None) else {}),
            "max_length": self.max_length,
            **extra,
            "versions": library_versions(),
        }

    def __repr__(self) -> str:
        return f"MaskedLM({self.name!r}, device={self.device}, dtype={self.dtype})"


def _known_head(model: torch.nn.Module, model_type: str) -> Callable[[torch.Tensor], torch.Tensor] | None:
    """The masked-LM head of architectures whose head is more than one child module (checked by the caller)."""
    if model_type == "distilbert":
        return lambda h: model.vocab_projector(model.vocab_layer_norm(model.activation(model.vocab_transform(h))))
    if model_type == "electra" and hasattr(model, "generator_lm_head"):
        return lambda h: model.generator_lm_head(model.generator_predictions(h))
    if model_type == "deberta-v2" and hasattr(model, "lm_predictions"):  # the head of DeBERTa's own checkpoints (legacy=False)
        return lambda h: model.lm_predictions(h, model.deberta.embeddings.word_embeddings)
    if model_type == "modernbert" and hasattr(model, "decoder") and hasattr(model, "head"):
        return lambda h: model.decoder(model.head(h))
    return None


def _placement(model: torch.nn.Module) -> dict[str, str]:
    """Where accelerate put the model's modules: device -> the first module placed there."""
    placed: dict[str, str] = {}
    for module, where in model.hf_device_map.items():
        placed.setdefault(str(where), module or "(all)")
    return placed


def _max_length(config: Any, tokenizer: Any) -> int:
    """The longest input (special tokens included) the model's position table allows."""
    limits = []
    positions = getattr(config, "max_position_embeddings", None)
    if positions:
        # RoBERTa-style models start position ids after the padding index.
        offset = (config.pad_token_id or 0) + 1 if config.model_type in ("roberta", "xlm-roberta", "camembert") else 0
        limits.append(int(positions) - offset)
    tok_limit = getattr(tokenizer, "model_max_length", None)
    if tok_limit and tok_limit < 1_000_000:
        limits.append(int(tok_limit))
    return min(limits) if limits else 512


# ---------------------------------------------------------------------------------------
# Loading
# ---------------------------------------------------------------------------------------


#: The longest hub id part (the hub's own rule).
_HUB_PART_MAX = 96
#: The most characters of a refused name a message repeats.
_SHOWN_MAX = 60


def check_hub_id(name: str) -> None:
    """Refuse a hub id the Hugging Face hub would reject, with the rule it breaks (one line, no HFValidationError)."""
    rule = "hub ids are `name` or `org/name` of letters, digits, '-', '_' and '.'"
    shown = repr(name if len(name) <= _SHOWN_MAX else name[:_SHOWN_MAX] + "…")
    parts = name.split("/")
    if len(parts) > 2 or not all(parts):
        raise InputError(f"{shown} is not a hub id: {rule}.")
    for part in parts:
        bad = next((c for c in part if not (c.isascii() and (c.isalnum() or c in "-_."))), None)
        if bad is not None:
            character = "a space" if bad == " " else repr(bad)
            raise InputError(f"{shown} is not a hub id: it contains {character}, and {rule}.")
        if "--" in part or ".." in part:
            raise InputError(f"{shown} is not a hub id: it contains '--' or '..', which hub ids may not.")
        if part[0] in "-." or part[-1] in "-.":
            raise InputError(f"{shown} is not a hub id: a hub id's parts may not start or end with '-' or '.'.")
        if len(part) > _HUB_PART_MAX:
            raise InputError(f"{shown} is not a hub id: its parts are at most {_HUB_PART_MAX} characters.")
    if name.endswith(".git") or name.endswith(".ipynb"):
        raise InputError(f"{shown} is not a hub id: it may not end with .git or .ipynb.")


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
) -> MaskedLM:
    """Load a Hugging Face masked LM by hub id or local folder.

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

    model, tokenizer = _from_pretrained(name, target, rev, files_only, torch_dtype, allow_pickle, device_map)
    if device_map is None:
        model.to(dev)
    else:
        dev = model.get_input_embeddings().weight.device
    check_finite_weights(model, name)
    return MaskedLM(model, tokenizer, name=name, source=source, revision=rev, fingerprint=fingerprint, device=dev, dtype=torch_dtype)


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


def _from_pretrained(
    name: str, target: str, revision: str | None, files_only: bool, dtype: torch.dtype, allow_pickle: bool, device_map: str | None = None
) -> tuple[torch.nn.Module, Any]:
    from transformers import MODEL_FOR_MASKED_LM_MAPPING, AutoConfig, AutoModelForMaskedLM, AutoTokenizer
    from transformers.utils import logging as hf_logging

    if Path(target).is_dir():
        _check_local_folder(Path(target), allow_pickle)
    common = {"revision": revision, "local_files_only": files_only, "trust_remote_code": False}
    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    try:
        try:
            tokenizer = AutoTokenizer.from_pretrained(target, **common)
        except Exception as exc:
            raise ModelLoadError(f"Could not load the tokenizer of {name}: {_first_line(exc)}") from exc
        if len(tokenizer) <= len(set(tokenizer.all_special_ids)) + 1:
            raise ModelLoadError(
                f"The tokenizer of {name} has no vocabulary (only its special tokens): the tokenizer files are "
                "missing or broken; copy them again (tokenizer.save_pretrained)."
            )
        if getattr(tokenizer, "mask_token_id", None) is None:
            raise NotMaskedLMError(f"The tokenizer of {name} has no mask token: biaslens needs a masked language model.")
        try:
            config = AutoConfig.from_pretrained(target, **common)
        except Exception as exc:
            raise ModelLoadError(f"Could not read the config of {name}: {_first_line(exc)}") from exc
        if type(config) not in MODEL_FOR_MASKED_LM_MAPPING:
            kind = ", ".join(getattr(config, "architectures", None) or [config.model_type])
            raise NotMaskedLMError(
                f"{name} ({kind}) is not a masked language model: biaslens needs a model that "
                "AutoModelForMaskedLM can load (BERT, RoBERTa, ALBERT, DistilBERT, ...)."
            )

        def load() -> tuple[torch.nn.Module, dict[str, Any]]:
            try:
                return AutoModelForMaskedLM.from_pretrained(
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
        raise NotMaskedLMError(
            f"{name} has no trained masked-LM head: {len(missing)} weights are missing from the checkpoint "
            f"(e.g. {missing[0]}), so they would be random. Use a checkpoint saved with its MLM head "
            "(an *ForMaskedLM model)."
        )
    return model, tokenizer


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


def _check_local_folder(folder: Path, allow_pickle: bool) -> None:
    """A clear message, before transformers tries, for an incomplete or corrupted model folder.

    Checks: config.json, a weights file (pickle refused unless `allow_pickle`: a pickle can
    run code), every shard an index names, safetensors headers that cover their files (a
    truncated copy), and the tokenizer's vocabulary files.
    """
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
    if has_safetensors:
        _check_safetensors(folder, names)
    if not names & set(_TOKENIZER_FILES) and not any(n.endswith(".model") for n in names):
        raise ModelLoadError(
            f"{folder} has no tokenizer files (tokenizer.json, vocab.txt, vocab.json or a SentencePiece .model): "
            "save the model's tokenizer into it too (tokenizer.save_pretrained)."
        )


def _check_safetensors(folder: Path, names: set[str]) -> None:
    from safetensors import safe_open

    files = ["model.safetensors"] if "model.safetensors" in names else []
    if "model.safetensors.index.json" in names:
        try:
            index = json.loads((folder / "model.safetensors.index.json").read_text())
            files = sorted(set(index["weight_map"].values()))
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            raise ModelLoadError(f"{folder}: model.safetensors.index.json is unreadable or corrupted ({exc}); copy it again.") from exc
        absent = [f for f in files if f not in names]
        if absent:
            raise ModelLoadError(f"{folder} is incomplete: weight shard {absent[0]} is missing ({len(absent)} of {len(files)}); copy it again.")
    for file in files:
        try:
            with safe_open(str(folder / file), "pt"):
                pass
        except Exception as exc:
            raise ModelLoadError(
                f"{folder}: the weights file {file} is corrupted or incomplete ({_first_line(exc)}); download or copy it again."
            ) from exc


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]


__all__ = [
    "DEFAULT_MODEL",
    "DEVICE_MAPS",
    "DTYPES",
    "Encoding",
    "MaskedLM",
    "PRESETS",
    "VERIFIED_ARCHITECTURES",
    "check_model_source",
    "folder_fingerprint",
    "library_versions",
    "load_model",
    "resolve_device",
    "resolve_dtype",
]
