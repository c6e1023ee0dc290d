"""What every kind of language model biaslens scores shares: `Encoding` and the `LanguageModel` base.

The engine scores through one narrow waist (docs/architecture.md, "Two model kinds"):
a loaded model tokenizes a sentence into an `Encoding` and exposes its network split in
two, `hidden_states` (the transformer body) and `project` (the LM head), so the scoring
core gathers the positions it reads before the expensive vocabulary projection. What
differs between the kinds is declared, not branched on:

* `kind`: "masked" (`biaslens.engine.models.MaskedLM`) or "causal" (`biaslens.engine.causal.CausalLM`);
  the metric registry says which kinds each metric applies to (`Metric.kinds`).
* `reads_previous`: where the distribution over token i is read: at i itself (a masked LM,
  nothing masked: AUL's reading) or at i - 1 (a causal LM: token i given the tokens before it).
* `seen_from_later`: which query rows can attend to token i: every row (a masked LM) or only i and
  the rows after it (a causal LM); the attention a token receives is averaged over those rows.
* `start_context`: token ids run once per pass whose last distribution predicts every
  sentence's first token (bias-bench's reading of a causal model's first token), or None.
* `compat_modes`: the scoring modes it can be scored in (kaneko2022 reproduces a masked-LM
  paper's code: a masked LM only).
* `left_to_right`: a token's distribution depends on the tokens before it only (a causal LM),
  so text after a text cannot change its scores (`biaslens.score`'s suffix).
* `takes_first_token` / `first_token_policy` / `with_first_token`: whether the kind reads a
  sentence's first token under a policy (a causal LM: `biaslens.engine.causal.FirstToken`),
  which one, and a view reading under another; a kind without one refuses a policy.
* `fills_masks`: it predicts a masked token from both sides (a masked LM), which the analyses
  built on masking need (mlm-bias's measures, Kurita's templates, the paper's tables).
* `text_variants`: how it reads any text token by token (`biaslens.engine.text_scores`'
  `variant`: PLL, PLL-word-l2r or unmasked for a masked LM; one reading for a causal LM),
  the default first; `length_rule`: how a text's tokens count against the model's limit
  before the model loads (the special tokens and prefix the kind adds).
* `scoring_tag`: what of the reading a result-cache key must name beyond the model (a causal
  model's first-token policy); "" for a masked LM, whose keys are unchanged.
* `_tokenize` / `_encoding`: how a kind turns sentences into `Encoding`s (special tokens,
  the prefix a causal model reads its first token from).

A model object is never mutated after loading, so one instance serves many threads (the
app shares it between sessions); `limited` and `CausalLM.with_first_token` are views that
share the weights.
"""

from __future__ import annotations

import copy
import functools
import platform
import threading
from dataclasses import dataclass
from importlib import metadata
from typing import Any, Callable, ClassVar, Sequence, cast

import numpy as np
import torch

from biaslens.data.sentences import check_sentence
from biaslens.engine.internals import Internals, Intervention, intervene
from biaslens.engine.words import covered_texts, display_token
from biaslens.errors import InputError, MetricUnavailableError


@dataclass(frozen=True)
class Encoding:
    """A sentence tokenized with the model's own tokenizer, special tokens included.

    `unscored` holds positions of real tokens that no metric scores: a causal model's first token when
    nothing comes before it (first-token policy "none"), since no position of the sentence predicts it.
    """

    text: str
    ids: tuple[int, ...]
    special: tuple[bool, ...]
    tokens: tuple[str, ...]
    # Per position, the index of the word the token belongs to (-1 for special tokens): the tokenizer's own
    # word boundaries (`word_ids`), else read from the pieces' markers. Empty when unknown.
    word_ids: tuple[int, ...] = ()
    unscored: tuple[int, ...] = ()

    def __len__(self) -> int:
        return len(self.ids)

    @functools.cached_property
    def scored_positions(self) -> np.ndarray:
        """Positions of the tokens every metric scores (not special, not `unscored`); computed once per encoding, read-only."""
        keep = ~np.asarray(self.special, dtype=bool)
        keep[list(self.unscored)] = False
        positions = np.flatnonzero(keep)
        positions.flags.writeable = False
        return positions


@dataclass(frozen=True)
class ContinuationQuery:
    """Continuations scored after one prompt: continuation k is read as `prompt + continuations[k] + suffix`.

    Only the continuations' tokens are scored, each given everything before it (a causal model: the prompt and the
    continuation's earlier tokens; a masked model: the whole row, the token masked alone). `suffix` holds what a
    tokenizer puts after a text (a masked model's [SEP]). `LanguageModel.encode_continuations` makes them.
    """

    prompt: tuple[int, ...]
    continuations: tuple[tuple[int, ...], ...]
    suffix: tuple[int, ...] = ()

    @property
    def tokens(self) -> int:
        """The continuations' tokens, what is scored."""
        return sum(map(len, self.continuations))


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


def first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]


class LanguageModel:
    """A loaded language model and its tokenizer, ready for scoring: what the engine, the pages and the CLI talk to.

    Subclasses: `MaskedLM`, `CausalLM`. Never mutated after init.
    """

    #: "masked" or "causal" (`Metric.kinds` says which metrics apply).
    kind: ClassVar[str] = ""
    #: True when the distribution over token i is read at position i - 1 (a causal LM), False when at i.
    reads_previous: ClassVar[bool] = False
    #: True when only token i itself and the tokens after it attend to token i (a causal LM), False when every token does:
    #: the attention a token receives (AULA's weights) is averaged over the query rows that can attend to it.
    seen_from_later: ClassVar[bool] = False
    #: Whether a right-padded batch needs its padding mask: a causal model's tokens never see the padding after them, so it
    #: runs without one (the attention then takes its fast causal kernels instead of a materialised mask).
    needs_padding_mask: ClassVar[bool] = True
    #: The scoring modes (`biaslens.engine.options.Compat` values) this kind can be scored in.
    compat_modes: ClassVar[tuple[str, ...]] = ("default",)
    #: True when a token's distribution depends on the tokens before it only (a causal LM): text after it changes nothing.
    left_to_right: ClassVar[bool] = False
    #: True when the kind reads a sentence's first token under a first-token policy (`with_first_token`: a causal LM).
    takes_first_token: ClassVar[bool] = False
    #: How this kind reads any text token by token (`biaslens.engine.text_scores.READINGS`), its default first.
    text_variants: ClassVar[tuple[str, ...]] = ()
    #: True when it predicts a masked token from both sides (a masked LM): what mlm-bias's measures, Kurita's templates and
    #: the paper's tables need (the masked metrics say so through `Metric.kinds`).
    fills_masks: ClassVar[bool] = False

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
        self.pad_id: int = self._pad_id()
        self.max_length = max_length_of(model.config, tokenizer)
        #: Who set `max_length` below the model's own limit (see `limited`); None = the model.
        self.length_limit: str | None = None
        # Special tokens typed into a sentence ([MASK], <s>, <|endoftext|>, ...); [UNK] is legitimate.
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

    def _pad_id(self) -> int:
        pad = self.tokenizer.pad_token_id
        return int(pad) if pad is not None else 0

    # -- what a kind decides -------------------------------------------------------------
    @property
    def start_context(self) -> tuple[int, ...] | None:
        """Token ids whose last distribution gives every sentence's first token (run once per pass), or None."""
        return None

    @property
    def scoring_tag(self) -> str:
        """What a result-cache key names of how this model reads its tokens, beyond the model itself ("" for none)."""
        return ""

    @property
    def first_token_policy(self) -> str | None:
        """The first-token policy this model reads under (a `FirstToken` value), None for a kind without one."""
        return None

    def with_first_token(self, policy: Any) -> "LanguageModel":
        """This model (the same weights) reading first tokens under `policy`; a kind without a first-token policy refuses one."""
        raise InputError(f"{self.name} is a {self.kind} model: a first-token policy applies to causal models only.")

    @classmethod
    def length_rule(cls, tokenizer: Any, first_token: str | None) -> tuple[int, bool]:
        """How a text's tokens count against the model's limit, from its tokenizer alone (before the weights load): the tokens
        this kind adds to the tokenizer's, and whether the tokenizer adds its own special tokens; `first_token`: a policy
        asked for (None: the kind's default)."""
        return 0, True

    def _tokenize(self, texts: Sequence[str]) -> Any:
        """The tokenizer's batch of `texts`, with `input_ids` and `special_tokens_mask`."""
        raise NotImplementedError

    def _encoding(self, text: str, batch: Any, k: int) -> Encoding:
        """The `Encoding` of `text`, the `k`-th sentence of `batch`, checked."""
        raise NotImplementedError

    def _known_head(self) -> Callable[[torch.Tensor], torch.Tensor] | None:
        """The LM head of an architecture whose head is more than one child module (checked by `_verified_head`)."""
        return None

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
        batch = self._tokenize(list(texts))
        return [self._encoding(text, batch, k) for k, text in enumerate(texts)]

    def encode_continuations(self, prompt: str, continuations: Sequence[str], delimiter: str = " ") -> ContinuationQuery:
        """`continuations` after `prompt` (joined by `delimiter`), tokenized as lm-evaluation-harness does for a causal model
        (`TemplateLM._encode_pair`), whatever the kind: the prompt's trailing spaces move into each continuation, the
        prompt is encoded alone with the tokenizer's own special tokens (Llama's <s>, BERT's [CLS]; nothing for GPT-2), each
        whole text likewise, and a continuation is the whole text's tokens after the prompt's (before any special tokens
        the tokenizer puts last: the query's `suffix`). A first-token policy does not apply: a continuation never begins a
        text. Refuses an empty or over-long text and a continuation without tokens of its own, in one line.
        """
        check_sentence(prompt, "The prompt")
        spaces = len(prompt) - len(prompt.rstrip())
        context = prompt[: len(prompt) - spaces]
        tails = [prompt[len(context) :] + delimiter + check_sentence(c, "A continuation") for c in continuations]
        batch = self.tokenizer([context, *(context + t for t in tails)], return_special_tokens_mask=True, verbose=False)
        ids = [[int(i) for i in row] for row in batch["input_ids"]]
        special = [[bool(s) for s in row] for row in batch["special_tokens_mask"]]

        def trailing(k: int) -> int:
            return next((n for n, s in enumerate(reversed(special[k])) if not s), len(special[k]))

        head = ids[0][: len(ids[0]) - trailing(0)]
        conts, suffix = [], None
        for k, text in enumerate(continuations, start=1):
            end = len(ids[k]) - trailing(k)
            cont = tuple(ids[k][len(head) : end])
            if not cont:
                raise InputError(f"The continuation {text!r} has no tokens of its own after the prompt.")
            self._check_reserved([i for i, s in zip(ids[k][:end], special[k]) if not s])
            self._check_length(len(head) + len(cont) + trailing(k))
            tail = tuple(ids[k][end:])
            if suffix is not None and tail != suffix:
                raise InputError(f"The tokenizer of {self.name} ends the continuations of one prompt with different special tokens.")
            suffix = tail
            conts.append(cont)
        return ContinuationQuery(tuple(head), tuple(conts), suffix or ())

    def _check_length(self, n: int) -> None:
        if n > self.max_length:
            who = self.length_limit or self.name
            raise InputError(
                f"The sentence has {n} tokens; {who} accepts at most {self.max_length} "
                f"(special tokens included). Shorten it: biaslens never truncates a scored sentence."
            )

    def _check_reserved(self, ids: Sequence[int]) -> None:
        """Refuse a sentence whose own tokens include a reserved special token (typed in as text)."""
        typed = sorted({self.decode_token(i) for i in ids if i in self._reserved_ids})
        if typed:
            raise InputError(f"The sentence contains the tokenizer's reserved token {', '.join(typed)}; remove it.")

    def limited(self, max_tokens: int, who: str) -> "LanguageModel":
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

    def unlimited(self) -> "LanguageModel":
        """The model with its own length limit (itself unless this is a `limited` view)."""
        return self.__dict__.get("_unlimited", self)

    def decode_token(self, token_id: int) -> str:
        return self.tokenizer.convert_ids_to_tokens(int(token_id))

    def token_text(self, token_id: int) -> str:
        """The text a token of the vocabulary stands for, for people: the tokenizer's decoding of it alone (a byte-level
        BPE token "ĠcafÃ©" is " café"; one holding part of a character's bytes, U+FFFD). A model's predictions are drawn
        with it; a sentence's own tokens as the text they cover (`token_texts`)."""
        try:
            return str(self.tokenizer.decode([int(token_id)]))
        except Exception:  # (a tokenizer that cannot decode one token: its name as it writes it)
            return self.decode_token(token_id)

    def token_texts(self, encodings: Sequence[Encoding]) -> list[tuple[str, ...]]:
        """Each encoding's tokens as the text each covers in its sentence (`biaslens.engine.words.covered_texts`, from
        `char_offsets`), the special ones by their name ("<|endoftext|>", "[CLS]"): how every drawing shows a token."""
        out = []
        for encoding, offsets in zip(encodings, self.char_offsets(encodings)):
            shown = covered_texts(encoding.text, offsets)
            out.append(tuple(display_token(t) if s or not c else c for t, s, c in zip(encoding.tokens, encoding.special, shown)))
        return out

    def char_offsets(self, encodings: Sequence[Encoding]) -> list[np.ndarray]:
        """Each encoding's character offsets in its text, (L, 2), (-1, -1) at special positions.

        Read from the tokenizer (a fast tokenizer's `offset_mapping`), tokenizing the texts again and
        matching the result to the encoding's own tokens; where the tokenizer gives no offsets, found by
        looking for each token's characters in the text (`_matched_offsets`). What `biaslens.score` places tokens in
        words by, and what every drawing of a token shows (`token_texts`).
        """
        texts = [e.text for e in encodings]
        out: list[np.ndarray | None] = [None] * len(encodings)
        for specials in (False, True):
            todo = [k for k, o in enumerate(out) if o is None]
            if not todo:
                break
            try:
                batch = self.tokenizer(
                    [texts[k] for k in todo],
                    add_special_tokens=specials,
                    return_offsets_mapping=True,
                    return_special_tokens_mask=True,
                    verbose=False,
                )
            except (NotImplementedError, ValueError, TypeError):
                break
            for j, k in enumerate(todo):
                got_special = batch["special_tokens_mask"][j]
                own = [(int(i), tuple(o)) for i, o, s in zip(batch["input_ids"][j], batch["offset_mapping"][j], got_special) if not s]
                enc = encodings[k]
                positions = [p for p in range(len(enc)) if not enc.special[p]]
                if [enc.ids[p] for p in positions] != [i for i, _ in own]:
                    continue
                offsets = np.full((len(enc), 2), -1, dtype=np.int64)
                offsets[positions] = np.asarray([o for _, o in own], dtype=np.int64).reshape(-1, 2)
                out[k] = offsets
        return [o if o is not None else self._matched_offsets(e) for o, e in zip(out, encodings)]

    def _matched_offsets(self, encoding: Encoding) -> np.ndarray:
        """Offsets found by looking for each token's characters in the text, left to right (a tokenizer without offsets)."""
        text, folded = encoding.text, encoding.text.casefold()
        offsets = np.full((len(encoding), 2), -1, dtype=np.int64)
        cursor = 0
        for p, (token_id, special) in enumerate(zip(encoding.ids, encoding.special)):
            if special:
                continue
            piece = self.tokenizer.decode([token_id]).strip().removeprefix("##").casefold()
            at = folded.find(piece, cursor) if piece else -1
            if at < 0:
                offsets[p] = (cursor, cursor)
                continue
            offsets[p] = (at, at + len(piece))
            cursor = at + len(piece)
        if not text:
            offsets[:] = 0
        return offsets

    # -- the two halves of the model ----------------------------------------------------
    def hidden_states(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor, *, attentions: bool = False
    ) -> tuple[torch.Tensor, tuple[torch.Tensor, ...] | None]:
        """Last hidden states (B, L, H) and, if asked, the per-layer attention probabilities."""
        out = self._forward(input_ids, attention_mask, attentions, whole=False)
        return out.last_hidden_state, (tuple(out.attentions) if attentions else None)

    def logits(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor, *, attentions: bool = False
    ) -> tuple[torch.Tensor, tuple[torch.Tensor, ...] | None]:
        """Full forward pass (B, L, V): the fallback when the head cannot be split off."""
        out = self._forward(input_ids, attention_mask, attentions, whole=True)
        return out.logits, (tuple(out.attentions) if attentions else None)

    def _forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, attentions: bool, *, whole: bool) -> Any:
        """The body's output (`whole=False`) or the whole model's, with attention weights when asked (the eager twin)."""
        self._check_attentions(attentions)
        model = self._eager_model() if attentions else self.model
        mask = attention_mask if self.needs_padding_mask else None
        run: Any = model if whole else model.base_model
        return run(input_ids=input_ids, attention_mask=mask, output_attentions=attentions)

    def laid_out(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, position_ids: torch.Tensor) -> torch.Tensor:
        """Rows laid out by the caller: a 4D additive attention mask (B, 1, L, L: 0 where a token may look, the dtype's
        minimum elsewhere) and each token's position id. Last hidden states (B, L, H), or logits (B, L, V) where the head
        cannot be split off (`project` is None). What shares a prompt between continuations (`scoring.continuation_pass`)."""
        mask = attention_mask.to(self.dtype)
        model: Any = self.model
        if self.project is not None:
            return model.base_model(input_ids=input_ids, attention_mask=mask, position_ids=position_ids).last_hidden_state
        return model(input_ids=input_ids, attention_mask=mask, position_ids=position_ids).logits

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
        """Find the LM head and check that head(body(x)) equals the full model."""
        model = self.model
        base = model.base_model
        head = self._known_head()
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
            return f"{what} cannot run eager attention, which attention weights need ({first_line(exc)}), {tail}."
        with torch.inference_mode():
            try:
                out = eager.base_model(input_ids=probe, attention_mask=torch.ones_like(probe), output_attentions=True)
            except Exception as exc:
                return f"{what} cannot return attention weights ({first_line(exc)}), {tail}."
        att = getattr(out, "attentions", None)
        n = probe.shape[1]
        if not att or any(a is None or a.dim() != 4 or tuple(a.shape[-2:]) != (n, n) for a in att):
            return f"{what} returns no attention weights (its architecture has no attention layers that report them), {tail}."
        return None

    # -- inside the network: the hooks `biaslens.anatomy` reads through (engine/internals.py) ---------------
    def _final_norm(self) -> torch.nn.Module | None:
        """The norm the model applies to its last block's output before the LM head, or None (a kind declares it)."""
        return None

    @functools.cached_property
    def internals(self) -> Internals:
        """Where this network's blocks, attention heads and final norm are (found once; `Internals.unavailable` says why not)."""
        return Internals.of(cast(torch.nn.Module, self.model.base_model), self.num_layers, self.num_heads, self._final_norm())

    def require_internals(self, what: str) -> Internals:
        """`internals`, or `MetricUnavailableError` naming `what` and why this network has none to hook."""
        if self.internals.unavailable:
            raise MetricUnavailableError(f"{what} is not available for {self.name} ({self.model_type}): {self.internals.unavailable}.")
        return self.internals

    def word_embeddings(self, input_ids: torch.Tensor) -> torch.Tensor:
        """The rows of the input embedding table for `input_ids` (B, L) -> (B, L, H): what `inputs_embeds` replaces."""
        return cast(Any, self.model).get_input_embeddings()(input_ids)

    def body(self, input_ids: torch.Tensor | None = None, *, inputs_embeds: torch.Tensor | None = None) -> torch.Tensor:
        """The last hidden states (B, L, H) of unpadded rows, from token ids or from word embeddings (`inputs_embeds`:
        the model adds its position and token-type embeddings as it does to its own): what `project` reads."""
        return cast(torch.nn.Module, self.model.base_model)(input_ids=input_ids, inputs_embeds=inputs_embeds).last_hidden_state

    def layer_states(self, input_ids: torch.Tensor | None = None, *, inputs_embeds: torch.Tensor | None = None) -> list[torch.Tensor]:
        """Every layer's state of unpadded rows, before the final norm: [embeddings (each block's input, layer 0), the
        output of block 1, ..., of block L], L + 1 tensors (B, T, H). `final_norm(states[-1])` is `body`'s output."""
        self.require_internals("the layer-by-layer view")
        states: list[torch.Tensor] = []

        def record(layer: int, hidden: torch.Tensor) -> None:
            states.append(hidden)

        with intervene(self.internals, Intervention(block_input=record, record_final=True)) as seen:
            last = self.body(input_ids, inputs_embeds=inputs_embeds)
        return [*states, last if seen.final_input is None else seen.final_input]

    def final_norm(self, hidden: torch.Tensor) -> torch.Tensor:
        """`hidden` through the model's final norm (unchanged where its kind has none: a masked LM's head holds its own)."""
        norm = self.internals.final_norm
        return hidden if norm is None else norm(hidden)

    # -- provenance ---------------------------------------------------------------------
    def manifest(self, **extra: Any) -> dict[str, Any]:
        """What produced a result: recorded next to every score biaslens writes."""
        return {
            "model": self.name,
            "kind": self.kind,
            "source": self.source,
            "revision": self.revision,
            "fingerprint": self.fingerprint,
            "model_type": self.model_type,
            "dtype": str(self.dtype).removeprefix("torch."),
            "device": str(self.device),
            **({"device_map": _placement(self.model)} if getattr(self.model, "hf_device_map", None) else {}),
            "max_length": self.max_length,
            **self._reading(),
            **extra,
            "versions": library_versions(),
        }

    def _reading(self) -> dict[str, Any]:
        """What the manifest records of how this kind reads its tokens (a causal model's first-token policy)."""
        return {}

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r}, device={self.device}, dtype={self.dtype})"


def _placement(model: torch.nn.Module) -> dict[str, str]:
    """Where accelerate put the model's modules: device -> the first module placed there."""
    placed: dict[str, str] = {}
    for module, where in model.hf_device_map.items():
        placed.setdefault(str(where), module or "(all)")
    return placed


def max_length_of(config: Any, tokenizer: Any) -> int:
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


__all__ = ["ContinuationQuery", "Encoding", "LanguageModel", "first_line", "library_versions", "max_length_of", "word_ids_of"]
