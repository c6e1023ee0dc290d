"""Causal (decoder) language models: GPT-2, Pythia/GPT-NeoX, Llama-family, OPT, Qwen2, ...

A `CausalLM` reads token i's distribution at position i - 1: log P(w_i | w_<i), the left
context only (`LanguageModel.reads_previous`). Everything else (batching, the vocabulary
read-out, attention, caching) is the engine's, shared with masked LMs.

**The first token.** No position of a sentence predicts its own first token, so a causal
model needs something before it, and tools disagree on what. The policy is explicit
(`FirstToken`), recorded in every manifest and part of every result-cache key; nothing is
dropped silently:

* `bos`: the model's BOS token is put before the sentence and every token of the sentence is
  scored. Where the tokenizer has no BOS token, its EOS token is used (GPT-2 and Pythia have one
  token, `<|endoftext|>`, for both): lm-evaluation-harness's `prefix_token_id`.
* `none`: nothing before the sentence; its first token is context only and not scored
  (`Encoding.unscored`), as minicons' `IncrementalLMScorer` does unless `bos_token=True`.
* `tokenizer`: the sentence as the tokenizer encodes it with its own special tokens (Llama's
  `<s>`; nothing for GPT-2), its first token context only: Oba, Kaneko & Bollegala (2024)'s code.
* `start`: bias-bench's reading: the first token given the start token `<|endoftext|>` alone
  (one forward pass shared by every sentence: `start_context`), every other token given the
  sentence without it. Where `<|endoftext|>` is not one token of the vocabulary, the BOS token
  stands in for it.

`load_model` picks `bos` when the tokenizer has a BOS or EOS token, else `none`;
`CausalLM.with_first_token` gives the same model (shared weights) under another policy.
"""

from __future__ import annotations

import copy
from enum import StrEnum
from types import SimpleNamespace
from typing import Any, Sequence

import torch

from biaslens.engine.lm import Encoding, LanguageModel, word_ids_of
from biaslens.errors import InputError


class FirstToken(StrEnum):
    """How a causal model reads a sentence's first token (module docstring)."""

    BOS = "bos"
    NONE = "none"
    TOKENIZER = "tokenizer"
    START = "start"

    @classmethod
    def parse(cls, value: "FirstToken | str") -> "FirstToken":
        if isinstance(value, cls):
            return value
        try:
            return cls(str(value).strip().lower())
        except ValueError:
            raise InputError(f"Unknown first-token policy {value!r}: choose from {', '.join(p.value for p in cls)}.") from None


#: One line per policy, for the CLI's help, the manifest and the app.
FIRST_TOKEN_HELP: dict[FirstToken, str] = {
    FirstToken.BOS: "the model's BOS token (EOS where it has none, e.g. GPT-2's <|endoftext|>) before the sentence; every token scored",
    FirstToken.NONE: "nothing before the sentence; its first token is context only, not scored",
    FirstToken.TOKENIZER: "the tokenizer's own special tokens (Llama's <s>, nothing for GPT-2); the first token is context only",
    FirstToken.START: "bias-bench: the first token given <|endoftext|> alone, the others given the sentence without it",
}

#: The start token bias-bench encodes (`tokenizer.encode("<|endoftext|>")`).
START_TOKEN = "<|endoftext|>"


class CausalLM(LanguageModel):
    """A loaded causal LM and its tokenizer, reading each sentence under a first-token policy. Never mutated after init."""

    kind = "causal"
    reads_previous = True
    seen_from_later = True  # token i is attended by rows i, i + 1, ...: its attention is averaged over those (AULA-c)
    needs_padding_mask = False  # right padding comes after every real token: a causal model never sees it
    left_to_right = True
    takes_first_token = True
    text_variants = ("causal",)

    def __init__(self, model: torch.nn.Module, tokenizer: Any, *, first_token: FirstToken | str | None = None, **fields: Any):
        bos = tokenizer.bos_token_id if tokenizer.bos_token_id is not None else tokenizer.eos_token_id
        #: The token the `bos` policy puts before a sentence (BOS, else EOS), or None when the tokenizer has neither.
        self.bos_id: int | None = None if bos is None else int(bos)
        #: bias-bench's start token (`START_TOKEN` where it is one token of the vocabulary, else `bos_id`).
        self.start_id: int | None = _single_id(tokenizer, START_TOKEN) or self.bos_id
        super().__init__(model, tokenizer, **fields)
        default = FirstToken.BOS if self.bos_id is not None else FirstToken.NONE
        self.first_token: FirstToken = self._usable(FirstToken.parse(first_token) if first_token is not None else default)

    def _pad_id(self) -> int:
        for pad in (self.tokenizer.pad_token_id, self.tokenizer.eos_token_id):  # pads are masked out: any id will do
            if pad is not None:
                return int(pad)
        return 0

    def _usable(self, policy: FirstToken) -> FirstToken:
        if policy is FirstToken.BOS and self.bos_id is None:
            raise InputError(f"{self.name}'s tokenizer has no BOS or EOS token, so the first-token policy 'bos' cannot apply: use 'none'.")
        if policy is FirstToken.START and self.start_id is None:
            raise InputError(f"{self.name}'s tokenizer has no {START_TOKEN} or BOS token, so bias-bench's first-token policy cannot apply.")
        return policy

    def with_first_token(self, policy: FirstToken | str) -> "CausalLM":
        """This model (the same weights) reading first tokens under `policy`."""
        policy = self._usable(FirstToken.parse(policy))
        if policy is self.first_token:
            return self
        view = copy.copy(self)
        view.first_token = policy
        return view

    # -- what the engine asks of a kind --------------------------------------------------
    @property
    def start_context(self) -> tuple[int, ...] | None:
        return (self.start_id,) if self.first_token is FirstToken.START and self.start_id is not None else None

    @property
    def scoring_tag(self) -> str:
        return f"first-token={self.first_token.value}"

    @property
    def first_token_policy(self) -> str | None:
        return self.first_token.value

    @classmethod
    def length_rule(cls, tokenizer: Any, first_token: str | None) -> tuple[int, bool]:
        """One token more under the `bos` policy (the default where the tokenizer has a BOS or EOS token); the tokenizer's own
        special tokens only under `tokenizer`."""
        has_bos = tokenizer.bos_token_id is not None or tokenizer.eos_token_id is not None
        policy = FirstToken.parse(first_token) if first_token else (FirstToken.BOS if has_bos else FirstToken.NONE)
        return (1 if policy is FirstToken.BOS else 0), policy is FirstToken.TOKENIZER

    def _final_norm(self) -> torch.nn.Module | None:
        """The base model's final norm (GPT-2's `ln_f`, GPT-NeoX's `final_layer_norm`, Llama's and Qwen2's `norm`), applied
        to the last block's output before the LM head."""
        base = self.model.base_model
        found = (getattr(base, name, None) for name in ("ln_f", "final_layer_norm", "norm"))
        return next((module for module in found if isinstance(module, torch.nn.Module)), None)

    def _reading(self) -> dict[str, Any]:
        return {"first_token": self.first_token.value, "first_token_reading": FIRST_TOKEN_HELP[self.first_token]}

    def _tokenize(self, texts: Sequence[str]) -> Any:
        own = self.first_token is FirstToken.TOKENIZER  # only Oba et al.'s reading keeps the tokenizer's special tokens
        return self.tokenizer(list(texts), add_special_tokens=own, return_special_tokens_mask=True, verbose=False)

    def _encoding(self, text: str, batch: Any, k: int) -> Encoding:
        ids = [int(i) for i in batch["input_ids"][k]]
        special = [bool(s) for s in batch["special_tokens_mask"][k]]
        self._check_reserved([i for i, s in zip(ids, special) if not s])
        tokens = list(self.tokenizer.convert_ids_to_tokens(ids))
        one = SimpleNamespace(word_ids=lambda: batch.word_ids(k))
        words = list(word_ids_of(one, tokens, special))
        if self.first_token is FirstToken.BOS:
            assert self.bos_id is not None  # `_usable`
            ids, special, words = [self.bos_id, *ids], [True, *special], [-1, *words]
            tokens = [self.decode_token(self.bos_id), *tokens]
        first = next((p for p, s in enumerate(special) if not s), None)
        unscored: tuple[int, ...] = ()
        if self.first_token in (FirstToken.NONE, FirstToken.TOKENIZER) and first == 0:
            unscored = (0,)  # nothing before it: context only
        self._check_length(len(ids))
        encoding = Encoding(text=text, ids=tuple(ids), special=tuple(special), tokens=tuple(tokens), word_ids=tuple(words), unscored=unscored)
        if not len(encoding.scored_positions):
            reason = f" (first-token policy {self.first_token.value}: the first token is context only)" if unscored else ""
            raise InputError(f"The sentence {text!r} has no tokens to score{reason}.")
        return encoding


def _single_id(tokenizer: Any, text: str) -> int | None:
    """The id of `text` when the tokenizer encodes it as exactly one token (no special tokens added), else None."""
    try:
        ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    except Exception:
        return None
    return int(ids[0]) if len(ids) == 1 else None


__all__ = ["FIRST_TOKEN_HELP", "START_TOKEN", "CausalLM", "FirstToken"]
