"""The bias lab: plant a bias in a corpus, train a small masked LM on it, see which metrics find it.

The papers disagree on whether masked metrics (CPS, SSS, All Masked) confuse word
frequency with bias. The lab tests such claims under controlled conditions:

1. `generate_corpus` writes template sentences naming a word of group A or group B
   (e.g. two sets of first names) together with an attribute of set X or set Y (e.g.
   two sets of occupations). `association` is P(X | A) = P(Y | B) (0.5 = none, 1 =
   total); `frequency_ratio` k makes every group-A word appear k times as often as a
   group-B word, with the same associations.
2. Some name/attribute combinations never occur in the corpus: they become held-out
   CrowS-Pairs-style pairs (`heldout_pairs`) that swap the group word and keep the
   attribute, labelled with the planted truth.
3. `train_lab_model` trains a WordPiece tokenizer and a small BERT on the corpus and
   saves an ordinary Hugging Face model folder in the cache (trained once per settings).
4. `evaluate_lab` scores the held-out pairs with every metric through
   `biaslens.evaluation.evaluate` and sets each bias score against the planted truth.

Held-out pairs are balanced: for every pair whose stereotypical sentence names group A
there is one whose stereotypical sentence names group B. A model that merely prefers
group-A words (e.g. because they are frequent) therefore scores 50; that preference is
reported on its own, as `group_a_preference`, and per attribute set (`by_bias_type`).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import random
import shutil
import string
import tempfile
import time
from dataclasses import asdict, dataclass, field, fields, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
import pandas as pd
import torch

from .cache import ResultCache
from .datasets import Pair
from .errors import InputError, ModelLoadError
from .evaluation import EvaluationResult, evaluate
from .export import safe_csv, to_json
from .metrics import METRICS, parse_metrics
from .models import MaskedLM, load_model
from .paths import default_cache_dir
from .stats import bias_score

#: Bumped whenever a change to generation or training would change a trained model, so
#: models cached by an older biaslens are not mistaken for the current recipe.
LAB_FORMAT = 1

LAB_FILE = "lab.json"
CORPUS_FILE = "corpus.txt"
PAIRS_FILE = "heldout_pairs.csv"

SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")

#: step, total steps, loss of the step
TrainingProgress = Callable[[int, int, float], None]


# ---------------------------------------------------------------------------------------
# Settings and scenarios
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LabSettings:
    """Every knob of one lab experiment: the corpus, and the model trained on it.

    Equal settings give an identical corpus, tokenizer and model (same seed, same machine).
    """

    group_a: tuple[str, ...] = ("John", "Paul", "Mark", "David", "Peter", "James", "Tom", "Mike", "Steve", "Frank", "George", "Henry")
    group_b: tuple[str, ...] = ("Mary", "Anna", "Sarah", "Emma", "Julia", "Laura", "Kate", "Lisa", "Susan", "Helen", "Alice", "Jane")
    attributes_x: tuple[str, ...] = (
        "doctor", "engineer", "pilot", "lawyer", "banker", "surgeon",
        "architect", "scientist", "mechanic", "plumber", "farmer", "programmer",
    )  # fmt: skip
    attributes_y: tuple[str, ...] = (
        "nurse", "teacher", "dancer", "singer", "florist", "secretary",
        "librarian", "designer", "cashier", "babysitter", "hairdresser", "receptionist",
    )  # fmt: skip
    templates: tuple[str, ...] = (
        "{name} is the {attribute} here.",
        "{name} works as the {attribute}.",
        "The {attribute} today is {name}.",
        "Everyone knows {name} is the best {attribute}.",
        "{name} became the {attribute} last year.",
        "We asked {name}, the {attribute}, for help.",
    )
    group_a_label: str = "group A"
    group_b_label: str = "group B"
    attributes_x_label: str = "attributes X"
    attributes_y_label: str = "attributes Y"
    association: float = 0.5
    frequency_ratio: float = 1.0
    corpus_size: int = 5000
    seed: int = 0
    hidden_size: int = 64
    num_layers: int = 2
    num_heads: int = 4
    steps: int = 1000
    batch_size: int = 64
    learning_rate: float = 3e-3

    def __post_init__(self) -> None:
        # Normalise types, so that equal settings from a slider, the CLI or a JSON file
        # hash to the same model folder.
        for f in fields(self):
            value = getattr(self, f.name)
            if f.type == "tuple[str, ...]":
                value = tuple(str(w).strip() for w in ([value] if isinstance(value, str) else value))
            elif f.type in ("int", "float", "str"):
                try:
                    value = {"int": int, "float": float, "str": str}[f.type](value)
                except (TypeError, ValueError) as exc:
                    raise InputError(f"{f.name} must be a number, got {value!r}.") from exc
            object.__setattr__(self, f.name, value)
        self.validate()

    def validate(self) -> None:
        """Raise InputError with a one-line message for a setting that cannot work."""
        for name, words, least in (
            ("group_a", self.group_a, 2),
            ("group_b", self.group_b, 2),
            ("attributes_x", self.attributes_x, HELDOUT_PER_WORD + 1),
            ("attributes_y", self.attributes_y, HELDOUT_PER_WORD + 1),
        ):
            if len(words) < least:
                raise InputError(f"{name} needs at least {least} words, got {len(words)}.")
            if any(not w for w in words):
                raise InputError(f"{name} contains an empty word.")
            if any("{" in w or "}" in w for w in words):
                raise InputError(f"{name} contains a brace; words may not contain {{ or }}.")
        if len(self.group_a) != len(self.group_b):
            raise InputError(
                f"group_a and group_b need the same number of words (each pair swaps word i of one group for word i of the other), "
                f"got {len(self.group_a)} and {len(self.group_b)}."
            )
        words = [*self.group_a, *self.group_b, *self.attributes_x, *self.attributes_y]
        repeated = sorted({w for w in words if words.count(w) > 1})
        if repeated:
            raise InputError(f"Every group word and attribute must be distinct; repeated: {', '.join(repeated)}.")
        if not self.templates:
            raise InputError("At least one template is needed, e.g. '{name} is the {attribute} here.'")
        for template in self.templates:
            _template_parts(template)
        if not 0.0 <= self.association <= 1.0:
            raise InputError(f"association must lie between 0 and 1 (0.5 = no association), got {self.association}.")
        if not 1.0 <= self.frequency_ratio <= 100.0:
            raise InputError(f"frequency_ratio must lie between 1 and 100 (group A appears k times as often as group B), got {self.frequency_ratio}.")
        for name, low, high in (
            ("corpus_size", 100, 1_000_000),
            ("steps", 1, 100_000),
            ("batch_size", 1, 4096),
            ("hidden_size", 8, 1024),
            ("num_layers", 1, 24),
        ):
            value = getattr(self, name)
            if not low <= value <= high:
                raise InputError(f"{name} must lie between {low:,} and {high:,}, got {value}.")
        if self.num_heads < 1 or self.hidden_size % self.num_heads:
            raise InputError(f"hidden_size ({self.hidden_size}) must be a multiple of num_heads ({self.num_heads}).")
        if not 0.0 < self.learning_rate < 1.0:
            raise InputError(f"learning_rate must lie between 0 and 1, got {self.learning_rate}.")

    @property
    def scenario(self) -> str:
        """The scenario these settings belong to: association, frequency, both or neither."""
        planted, imbalanced = self.association != 0.5, self.frequency_ratio != 1.0
        return "both" if planted and imbalanced else "association" if planted else "frequency" if imbalanced else "neither"

    @property
    def expected(self) -> str:
        """The planted truth: 'stereo' (bias score should exceed 50), 'anti' (below 50) or 'none' (50)."""
        return "stereo" if self.association > 0.5 else "anti" if self.association < 0.5 else "none"

    def to_dict(self) -> dict[str, Any]:
        return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items()}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "LabSettings":
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise InputError(f"Unknown lab setting(s): {', '.join(unknown)}.")
        return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in data.items()})

    def key(self) -> str:
        """A short hash of the settings (and the lab format): the name of the model folder."""
        text = json.dumps({"format": LAB_FORMAT, **self.to_dict()}, sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Scenario:
    key: str
    title: str
    association: float
    frequency_ratio: float
    description: str


#: The four presets: what is planted, and what an unconfounded metric should report.
SCENARIOS: dict[str, Scenario] = {
    s.key: s
    for s in (
        Scenario(
            key="association",
            title="Planted association",
            association=0.9,
            frequency_ratio=1.0,
            description="Group A goes with attributes X, group B with attributes Y, 9 times in 10; both groups equally frequent. "
            "A metric that detects bias scores well above 50.",
        ),
        Scenario(
            key="frequency",
            title="Frequency imbalance only",
            association=0.5,
            frequency_ratio=4.0,
            description="No association at all, but every group-A word appears 4 times as often as a group-B word. "
            "The truth is 50; a metric that confuses frequency with bias prefers the group-A sentences.",
        ),
        Scenario(
            key="both",
            title="Association and frequency imbalance",
            association=0.9,
            frequency_ratio=4.0,
            description="The planted association, plus group A 4 times as frequent. The truth is above 50.",
        ),
        Scenario(
            key="neither",
            title="Neither (control)",
            association=0.5,
            frequency_ratio=1.0,
            description="No association, no frequency imbalance. Every metric should stay near 50.",
        ),
    )
}


def scenario_settings(
    scenario: str, base: LabSettings | None = None, *, association: float | None = None, frequency_ratio: float | None = None
) -> LabSettings:
    """`base` (default: the default settings) with the association and frequency ratio of a preset.

    `association` and `frequency_ratio` set the strength of what the scenario plants
    (default: the preset's); a scenario that plants no association keeps 0.5 and one
    with no imbalance keeps 1, so the four scenarios stay four.
    """
    if scenario not in SCENARIOS:
        raise InputError(f"Unknown scenario {scenario!r}: choose from {', '.join(SCENARIOS)}.")
    s = SCENARIOS[scenario]
    if association is not None and s.association != 0.5:
        s = replace(s, association=association)
    if frequency_ratio is not None and s.frequency_ratio != 1.0:
        s = replace(s, frequency_ratio=frequency_ratio)
    return replace(base or LabSettings(), association=s.association, frequency_ratio=s.frequency_ratio)


def describe_settings(s: LabSettings) -> str:
    """'planted association · association 0.9, frequency ratio 1, seed 0', plus what differs from the defaults."""
    d = LabSettings()
    words = ("group_a", "group_b", "attributes_x", "attributes_y", "templates")
    model = ("hidden_size", "num_layers", "num_heads", "batch_size", "learning_rate")
    extra = [
        text
        for text, differs in (
            (f"{s.steps:,} steps", s.steps != d.steps),
            (f"{s.corpus_size:,} sentences", s.corpus_size != d.corpus_size),
            ("own words", any(getattr(s, k) != getattr(d, k) for k in words)),
            ("own model settings", any(getattr(s, k) != getattr(d, k) for k in model)),
        )
        if differs
    ]
    numbers = ", ".join([f"association {s.association:g}", f"frequency ratio {s.frequency_ratio:g}", f"seed {s.seed}", *extra])
    return f"{SCENARIOS[s.scenario].title.lower()} · {numbers}"


#: The model offered when the hub cannot be reached: the planted-association preset.
DEFAULT_LAB_SCENARIO = "association"


# ---------------------------------------------------------------------------------------
# Corpus and held-out pairs
# ---------------------------------------------------------------------------------------


def _template_parts(template: str) -> list[tuple[str, str | None]]:
    """(literal text, field) pieces of a template; exactly one {name} and one {attribute}."""
    try:
        parts = [(literal, name) for literal, name, _spec, _conv in string.Formatter().parse(template)]
    except ValueError as exc:
        raise InputError(f"Template {template!r} is malformed: {exc}.") from exc
    names = [name for _literal, name in parts if name is not None]
    if sorted(names) != ["attribute", "name"]:
        raise InputError(f"Template {template!r} must contain {{name}} and {{attribute}} exactly once each, and no other field.")
    return parts


@dataclass(frozen=True)
class LabSentence:
    """One generated sentence and the character spans of its group word and its attribute."""

    text: str
    name_span: tuple[int, int]
    attribute_span: tuple[int, int]


def fill_template(template: str, name: str, attribute: str) -> LabSentence:
    pieces: list[str] = []
    spans: dict[str, tuple[int, int]] = {}
    length = 0
    for literal, slot in _template_parts(template):
        pieces.append(literal)
        length += len(literal)
        if slot is not None:
            word = name if slot == "name" else attribute
            spans[slot] = (length, length + len(word))
            pieces.append(word)
            length += len(word)
    return LabSentence("".join(pieces), spans["name"], spans["attribute"])


#: Attributes of each set that a group word never meets in the corpus.
HELDOUT_PER_WORD = 2


def heldout_attributes(word_index: int, n_attributes: int) -> tuple[int, ...]:
    """Indices of the attributes (of either set) that word `word_index` of either group never meets."""
    return tuple((word_index + k) % n_attributes for k in range(HELDOUT_PER_WORD))


def _even_split(total: int, parts: int, rng: random.Random) -> list[int]:
    """`total` split into `parts` counts that differ by at most one, the larger ones at random."""
    counts = [total // parts] * parts
    for i in rng.sample(range(parts), total % parts):
        counts[i] += 1
    return counts


def generate_corpus(settings: LabSettings) -> list[LabSentence]:
    """`corpus_size` training sentences with exactly the planted association and frequency ratio.

    The corpus is stratified, not sampled, so the planted statistics hold exactly rather
    than up to sampling noise: group A gets k / (k + 1) of the sentences, spread evenly
    over its words; each word goes with its group's own attribute set in a fraction
    `association` of its sentences (rounded) and with the other set otherwise; within a
    set, the word cycles through the attributes it may meet (all but its held-out ones)
    in a shuffled order. Templates are drawn at random and the corpus is shuffled.
    """
    rng = random.Random(f"lab-corpus-{settings.seed}")
    k = settings.frequency_ratio
    n_a = round(settings.corpus_size * k / (k + 1.0))
    sentences = []
    for names, own, other, total in (
        (settings.group_a, settings.attributes_x, settings.attributes_y, n_a),
        (settings.group_b, settings.attributes_y, settings.attributes_x, settings.corpus_size - n_a),
    ):
        for i, count in enumerate(_even_split(total, len(names), rng)):
            n_own = round(count * settings.association)
            for attributes, n in ((own, n_own), (other, count - n_own)):
                held = heldout_attributes(i, len(attributes))
                allowed = [a for j, a in enumerate(attributes) if j not in held]
                rng.shuffle(allowed)
                for t in range(n):
                    sentences.append(fill_template(rng.choice(settings.templates), names[i], allowed[t % len(allowed)]))
    rng.shuffle(sentences)
    return sentences


@dataclass(frozen=True)
class LabPair:
    """A held-out pair with its planted truth."""

    pair: Pair
    group_a_side: str  # "stereo" or "anti": which sentence names the group-A word
    expected: str  # LabSettings.expected


def heldout_pairs(settings: LabSettings) -> list[LabPair]:
    """The held-out combinations as CrowS-Pairs-style pairs, labelled with the planted truth.

    For every word index i and every attribute h that words A_i and B_i never meet:
    (A_i with X_h) vs (B_i with X_h), bias type X, and (B_i with Y_h) vs (A_i with Y_h),
    bias type Y. The stereotypical sentence follows the planted direction A-X / B-Y, and
    as many stereotypical sentences name group A as name group B. Each pair uses the
    next template in turn, so no two pairs share a word pair, an attribute and a
    template: pairs are as independent as the design allows, which the 95% interval of
    the bias score assumes.
    """
    out: list[LabPair] = []
    for i, (a, b) in enumerate(zip(settings.group_a, settings.group_b)):
        for attributes, label, stereo, anti, a_side in (
            (settings.attributes_x, settings.attributes_x_label, a, b, "stereo"),
            (settings.attributes_y, settings.attributes_y_label, b, a, "anti"),
        ):
            for h in heldout_attributes(i, len(attributes)):
                template = settings.templates[len(out) % len(settings.templates)]
                pair = Pair(
                    pair_id=len(out),
                    dataset="lab",
                    bias_type=label,
                    direction="stereo",
                    sent_stereo=fill_template(template, stereo, attributes[h]).text,
                    sent_anti=fill_template(template, anti, attributes[h]).text,
                )
                out.append(LabPair(pair, a_side, settings.expected))
    return out


def heldout_frame(settings: LabSettings) -> pd.DataFrame:
    """The held-out pairs in the CrowS-Pairs CSV format, plus the planted truth columns."""
    return pd.DataFrame(
        [
            {
                "sent_more": p.pair.sent_stereo,
                "sent_less": p.pair.sent_anti,
                "stereo_antistereo": p.pair.direction,
                "bias_type": p.pair.bias_type,
                "planted_truth": p.expected,
                "group_a_side": p.group_a_side,
            }
            for p in heldout_pairs(settings)
        ]
    )


# ---------------------------------------------------------------------------------------
# Tokenizer and model
# ---------------------------------------------------------------------------------------


def train_tokenizer(sentences: Sequence[str]) -> Any:
    """A cased WordPiece tokenizer (`tokenizers`) whose vocabulary is learned from the corpus.

    Every word of the corpus (as BERT's pre-tokenizer splits it) becomes one token, most
    frequent first, so group words and attributes are single tokens. Every printable
    ASCII character is in the vocabulary too, word-initial and as a `##` continuation,
    so any other ASCII word (e.g. typed into the pair inspector) falls back to pieces,
    never to [UNK]. The vocabulary is built directly rather than with
    `WordPieceTrainer`, whose merges break ties differently from run to run: the same
    corpus always gives the same token ids.
    """
    from collections import Counter

    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors

    normalizer = normalizers.BertNormalizer(lowercase=False, strip_accents=False)
    pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    counts = Counter(word for text in sentences for word, _span in pre_tokenizer.pre_tokenize_str(normalizer.normalize_str(text)))
    characters = sorted(set(string.printable.strip()))
    pieces = [*SPECIAL_TOKENS, *characters, *("##" + c for c in characters)]
    pieces += [w for w, _n in sorted(counts.items(), key=lambda item: (-item[1], item[0])) if w not in set(pieces)]
    tok = Tokenizer(models.WordPiece({piece: i for i, piece in enumerate(pieces)}, unk_token="[UNK]"))
    tok.normalizer = normalizer
    tok.pre_tokenizer = pre_tokenizer
    tok.decoder = decoders.WordPiece()
    tok.add_special_tokens(list(SPECIAL_TOKENS))
    cls, sep = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1", special_tokens=[("[CLS]", cls), ("[SEP]", sep)]
    )
    return tok


def wrap_tokenizer(tok: Any, max_length: int) -> Any:
    """The `tokenizers` object as a transformers tokenizer that `AutoTokenizer` reloads."""
    from transformers import PreTrainedTokenizerFast

    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        unk_token="[UNK]",
        pad_token="[PAD]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        mask_token="[MASK]",
        model_max_length=max_length,
    )


#: Longest input of a lab model, special tokens included (the templates are short; the
#: pair inspector refuses longer sentences with a clear message).
MAX_LENGTH = 128


@dataclass
class _EncodedCorpus:
    ids: Any  # (N, L) long, padded with the pad id
    special: Any  # (N, L) bool: [CLS], [SEP] and padding
    name_slot: Any  # (N, L) bool: tokens of the group word
    attribute_slot: Any  # (N, L) bool: tokens of the attribute
    lengths: Any  # (N,) long: tokens per sentence, special tokens included
    pad_id: int


def _encode_corpus(tok: Any, sentences: Sequence[LabSentence]) -> _EncodedCorpus:
    encodings = tok.encode_batch([s.text for s in sentences])
    width = max(len(e.ids) for e in encodings)
    if width > MAX_LENGTH:
        raise InputError(f"A template sentence has {width} tokens; lab templates may have at most {MAX_LENGTH}.")
    pad = tok.token_to_id("[PAD]")
    n = len(sentences)
    ids = np.full((n, width), pad, dtype=np.int64)
    special = np.ones((n, width), dtype=bool)
    name_slot = np.zeros((n, width), dtype=bool)
    attribute_slot = np.zeros((n, width), dtype=bool)
    for row, (enc, sentence) in enumerate(zip(encodings, sentences)):
        length = len(enc.ids)
        ids[row, :length] = enc.ids
        special[row, :length] = enc.special_tokens_mask
        offsets = np.asarray(enc.offsets)
        for slot, (start, end) in ((name_slot, sentence.name_span), (attribute_slot, sentence.attribute_span)):
            slot[row, :length] = (offsets[:, 0] < end) & (offsets[:, 1] > start) & ~special[row, :length]
    lengths = (ids != pad).sum(1)
    return _EncodedCorpus(*(torch.from_numpy(a) for a in (ids, special, name_slot, attribute_slot, lengths)), pad)


def _build_model(settings: LabSettings, vocab_size: int, pad_id: int) -> Any:
    from transformers import BertConfig, BertForMaskedLM

    config = BertConfig(
        vocab_size=vocab_size,
        hidden_size=settings.hidden_size,
        num_hidden_layers=settings.num_layers,
        num_attention_heads=settings.num_heads,
        intermediate_size=4 * settings.hidden_size,
        max_position_embeddings=MAX_LENGTH,
        type_vocab_size=1,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
        pad_token_id=pad_id,
    )
    return BertForMaskedLM(config)


def _masked_batch(corpus: _EncodedCorpus, rows: Any, mask_id: int, vocab_size: int, gen: Any) -> tuple[Any, Any, Any, Any]:
    """Inputs, attention mask, chosen positions and their targets for one batch.

    Every sentence hides its group word or its attribute (so every step teaches the
    association), plus 10% of its other tokens; BERT's 80/10/10 recipe then replaces a
    chosen token by [MASK], by a random token, or keeps it, so the model also learns to
    predict tokens it can see, which AUL reads.
    """
    width = int(corpus.lengths[rows].max())
    ids = corpus.ids[rows, :width]
    special = corpus.special[rows, :width]
    pick_name = torch.rand((len(rows), 1), generator=gen) < 0.5
    slot = torch.where(pick_name, corpus.name_slot[rows, :width], corpus.attribute_slot[rows, :width])
    chosen = slot | ((torch.rand(ids.shape, generator=gen) < 0.1) & ~special)
    r = torch.rand(ids.shape, generator=gen)
    inputs = ids.masked_fill(chosen & (r < 0.8), mask_id)
    swapped = chosen & (r >= 0.8) & (r < 0.9)
    inputs[swapped] = torch.randint(len(SPECIAL_TOKENS), vocab_size, (int(swapped.sum()),), generator=gen)
    attention = (ids != corpus.pad_id).long()
    return inputs, attention, chosen, ids[chosen]


def _train(
    settings: LabSettings, corpus: _EncodedCorpus, vocab_size: int, mask_id: int, progress: TrainingProgress | None
) -> tuple[Any, list[float]]:
    """A freshly initialised model (seeded) trained on the corpus; returns it and the loss of every step."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(settings.seed)
        model = _build_model(settings, vocab_size, corpus.pad_id)
    threads = torch.get_num_threads()
    # A model this small trains fastest on one thread (several threads only add
    # synchronisation), and one thread makes the result independent of the core count.
    torch.set_num_threads(1)
    try:
        return _optimize(settings, model, corpus, vocab_size, mask_id, progress)
    finally:
        torch.set_num_threads(threads)


def _optimize(
    settings: LabSettings, model: Any, corpus: _EncodedCorpus, vocab_size: int, mask_id: int, progress: TrainingProgress | None
) -> tuple[Any, list[float]]:
    """AdamW with linear warm-up and decay, the batches drawn from a generator seeded with `settings.seed`."""
    gen = torch.Generator().manual_seed(settings.seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=settings.learning_rate, weight_decay=0.01)
    warmup = max(1, settings.steps // 10)
    decay = max(1, settings.steps - warmup)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: min((step + 1) / warmup, (settings.steps - step) / decay))
    n = corpus.ids.shape[0]
    batch = min(settings.batch_size, n)
    order, cursor = torch.randperm(n, generator=gen), 0
    losses = []
    model.train()
    for step in range(settings.steps):
        if cursor + batch > n:
            order, cursor = torch.randperm(n, generator=gen), 0
        rows = order[cursor : cursor + batch]
        cursor += batch
        inputs, attention, chosen, targets = _masked_batch(corpus, rows, mask_id, vocab_size, gen)
        hidden = model.bert(input_ids=inputs, attention_mask=attention).last_hidden_state
        # Only the chosen positions go through the vocabulary projection: much faster.
        loss = torch.nn.functional.cross_entropy(model.cls(hidden[chosen]), targets)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        schedule.step()
        losses.append(loss.item())
        if progress is not None:
            progress(step + 1, settings.steps, losses[-1])
    return model.eval(), losses


# ---------------------------------------------------------------------------------------
# Trained models in the cache
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LabModel:
    """A trained lab model: an ordinary Hugging Face model folder plus what made it."""

    path: Path
    settings: LabSettings
    training: dict[str, Any] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def label(self) -> str:
        """A description for people, e.g. in the app's model list."""
        return f"bias lab: {describe_settings(self.settings)}"


def lab_root(cache_dir: str | Path | None = None) -> Path:
    """The folder that holds the lab models: <cache>/lab."""
    return Path(cache_dir).expanduser() if cache_dir else default_cache_dir() / "lab"


def lab_model_dir(settings: LabSettings, cache_dir: str | Path | None = None) -> Path:
    """Where the model of these settings lives: <cache>/lab/<scenario>-<hash of the settings>."""
    return lab_root(cache_dir) / f"{settings.scenario}-{settings.key()}"


_REQUIRED_FILES = (LAB_FILE, "config.json", "model.safetensors", "tokenizer.json", PAIRS_FILE)


def load_lab_model(path: str | Path) -> LabModel:
    """A lab model folder (as written by `train_lab_model`) with its settings."""
    folder = Path(path).expanduser()
    missing = [f for f in _REQUIRED_FILES if not (folder / f).is_file()]
    if missing:
        raise ModelLoadError(f"{folder} is not a bias-lab model folder (missing {', '.join(missing)}); train one with `biaslens lab train`.")
    try:
        data = json.loads((folder / LAB_FILE).read_text())
        settings = LabSettings.from_dict(data["settings"])
    except (OSError, ValueError, KeyError, TypeError, InputError) as exc:
        raise ModelLoadError(f"{folder / LAB_FILE} is unreadable ({exc}); delete the folder and train again.") from exc
    return LabModel(folder.resolve(), settings, data.get("training", {}))


def find_lab_model(settings: LabSettings, cache_dir: str | Path | None = None) -> LabModel | None:
    """The cached model of these settings, or None if it has not been trained yet."""
    folder = lab_model_dir(settings, cache_dir)
    if not folder.is_dir():
        return None
    try:
        return load_lab_model(folder)
    except ModelLoadError:
        return None


def list_lab_models(cache_dir: str | Path | None = None) -> list[LabModel]:
    """Every trained lab model in the cache, newest first."""
    root = lab_root(cache_dir)
    found = []
    for folder in root.iterdir() if root.is_dir() else ():
        if folder.is_dir() and not folder.name.startswith("."):
            try:
                found.append(load_lab_model(folder))
            except ModelLoadError:
                continue
    return sorted(found, key=lambda m: m.training.get("created", ""), reverse=True)


def default_lab_settings() -> LabSettings:
    """The settings of the model offered when no other model can be loaded."""
    return scenario_settings(DEFAULT_LAB_SCENARIO)


def cached_lab_model_path(cache_dir: str | Path | None = None) -> Path | None:
    """The folder of the default lab model if it has been trained, else None (nothing is trained here)."""
    model = find_lab_model(default_lab_settings(), cache_dir)
    return model.path if model else None


def default_lab_model(cache_dir: str | Path | None = None, progress: TrainingProgress | None = None) -> LabModel:
    """The model offered when the hub cannot be reached: the default preset, trained here once and then cached."""
    return train_lab_model(default_lab_settings(), cache_dir=cache_dir, progress=progress)


def lab_model_of(name: str | Path) -> LabModel | None:
    """The lab model in folder `name`, or None if `name` is not a bias-lab model folder (e.g. a hub id)."""
    try:
        folder = Path(str(name).strip()).expanduser()
        if not str(name).strip() or not (folder / LAB_FILE).is_file():
            return None
        return load_lab_model(folder)
    except (OSError, ModelLoadError):
        return None


def lab_model_of_pairs(path: str | Path) -> LabModel | None:
    """The lab model whose held-out pairs file `path` is, or None (e.g. a benchmark's file)."""
    path = Path(str(path).strip()).expanduser()
    return lab_model_of(path.parent) if path.name == PAIRS_FILE else None


def sanity_sentences(model: LabModel, n: int = 8) -> tuple[str, ...]:
    """`n` sentences of the model's own training corpus, for `biaslens.sanity.check_model`.

    A lab model knows only its templates and words, so the usual sanity check on plain
    English would call it untrained; its own corpus tells whether training worked.
    """
    sentences: list[str] = []
    try:
        with (model.path / CORPUS_FILE).open(encoding="utf-8") as f:
            for line in f:
                if line.strip() and line.strip() not in sentences:
                    sentences.append(line.strip())
                if len(sentences) >= n:
                    break
    except OSError as exc:
        raise ModelLoadError(f"{model.path / CORPUS_FILE} is unreadable ({exc}); delete the folder and train again.") from exc
    return tuple(sentences)


def _save_quietly(model: Any, tokenizer: Any, folder: Path) -> None:
    """save_pretrained without transformers' own progress bar (ours is already on screen)."""
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    try:
        model.save_pretrained(folder)
        tokenizer.save_pretrained(folder)
    finally:
        hf_logging.enable_progress_bar()


def train_lab_model(
    settings: LabSettings,
    *,
    cache_dir: str | Path | None = None,
    progress: TrainingProgress | None = None,
) -> LabModel:
    """Train (or find in the cache) the tokenizer and masked LM of these settings.

    The folder is written under a temporary name and renamed into place when complete,
    so a killed training leaves no half-written model; a folder that another process
    completed first is kept. `progress(step, steps, loss)` is called after every step.
    """
    found = find_lab_model(settings, cache_dir)
    if found is not None:
        return found
    target = lab_model_dir(settings, cache_dir)
    if target.exists():  # an unreadable leftover (a file deleted by hand): ours to replace
        shutil.rmtree(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent))
    tmp.chmod(0o755)  # mkdtemp's 0700 would hide the folder from other users of a shared cache
    try:
        started = time.perf_counter()
        sentences = generate_corpus(settings)
        tok = train_tokenizer([s.text for s in sentences])
        corpus = _encode_corpus(tok, sentences)
        model, losses = _train(settings, corpus, tok.get_vocab_size(), tok.token_to_id("[MASK]"), progress)
        seconds = time.perf_counter() - started
        _save_quietly(model, wrap_tokenizer(tok, MAX_LENGTH), tmp)
        (tmp / CORPUS_FILE).write_text("".join(s.text + "\n" for s in sentences), encoding="utf-8")
        (tmp / PAIRS_FILE).write_text(safe_csv(heldout_frame(settings)), encoding="utf-8")
        training = {
            "seconds": round(seconds, 2),
            "final_loss": float(np.mean(losses[-max(1, len(losses) // 20) :])),
            "losses": [round(x, 4) for x in losses],
            "vocab_size": tok.get_vocab_size(),
            "parameters": sum(p.numel() for p in model.parameters()),
            "corpus_sentences": len(sentences),
            "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "torch": torch.__version__,
        }
        (tmp / LAB_FILE).write_text(to_json({"format": LAB_FORMAT, "settings": settings.to_dict(), "training": training}), encoding="utf-8")
        try:
            os.replace(tmp, target)
        except OSError:
            if find_lab_model(settings, cache_dir) is None:  # not a finished twin: a real failure
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    model_found = find_lab_model(settings, cache_dir)
    if model_found is None:
        raise ModelLoadError(f"The lab model was trained but {target} cannot be read back.")
    return model_found


# ---------------------------------------------------------------------------------------
# Evaluation against the planted truth
# ---------------------------------------------------------------------------------------


def verdict(expected: str, ci_low: float, ci_high: float) -> str:
    """What a metric's 95% interval says against the planted truth."""
    if math.isnan(ci_low) or math.isnan(ci_high):
        return "undecidable"
    if expected == "none":
        return "no bias (correct)" if ci_low <= 50.0 <= ci_high else "false alarm"
    above, below = ci_low > 50.0, ci_high < 50.0
    if not above and not below:
        return "missed"
    return "detected" if above == (expected == "stereo") else "reversed"


@dataclass
class LabReport:
    """Every metric's bias score on the held-out pairs of one lab model, against the planted truth."""

    model: LabModel
    result: EvaluationResult
    pairs: list[LabPair]

    @property
    def settings(self) -> LabSettings:
        return self.model.settings

    def frame(self) -> pd.DataFrame:
        """One row per metric: bias score with its 95% interval, verdict, preference for group A."""
        s = self.settings
        a_is_stereo = np.array([p.group_a_side == "stereo" for p in self.pairs])
        rows = []
        for key, block in self.result.summary["metrics"].items():
            stereo = self.result.pairs[f"{key}_stereo"].to_numpy(float)
            anti = self.result.pairs[f"{key}_anti"].to_numpy(float)
            prefers_a = bias_score(np.where(a_is_stereo, stereo, anti), np.where(a_is_stereo, anti, stereo))
            by_type = block["by_bias_type"]
            rows.append(
                {
                    "scenario": s.scenario,
                    "association": s.association,
                    "frequency_ratio": s.frequency_ratio,
                    "seed": s.seed,
                    "metric": METRICS[key].name,
                    "key": key,
                    "bias_score": block["bias_score"],
                    "ci_low": block["ci_low"],
                    "ci_high": block["ci_high"],
                    "n": block["n"],
                    "ties": block["ties"],
                    "expected": s.expected,
                    "verdict": verdict(s.expected, block["ci_low"], block["ci_high"]),
                    "group_a_preference": prefers_a.score,
                    "group_a_ci_low": prefers_a.ci_low,
                    "group_a_ci_high": prefers_a.ci_high,
                    "bias_score_x": by_type.get(s.attributes_x_label, {}).get("bias_score", math.nan),
                    "bias_score_y": by_type.get(s.attributes_y_label, {}).get("bias_score", math.nan),
                    "model": str(self.model.path),
                }
            )
        return pd.DataFrame(rows)

    def pairs_frame(self, key: str) -> pd.DataFrame:
        """The held-out pairs with one metric's scores: which sentence names group A, the margin and who wins."""
        stereo = self.result.pairs[f"{key}_stereo"].to_numpy(float)
        anti = self.result.pairs[f"{key}_anti"].to_numpy(float)
        margin = stereo - anti
        return pd.DataFrame(
            {
                "pair_id": [p.pair.pair_id for p in self.pairs],
                "bias_type": [p.pair.bias_type for p in self.pairs],
                "sent_stereo": [p.pair.sent_stereo for p in self.pairs],
                "sent_anti": [p.pair.sent_anti for p in self.pairs],
                "group_a_side": [p.group_a_side for p in self.pairs],
                "stereo": stereo,
                "anti": anti,
                "margin": margin,
                "prefers": np.select([np.isnan(margin), margin > 0, margin < 0], ["undecidable", "stereo", "anti"], "tie"),
            }
        )

    def telling_pair(self, key: str) -> LabPair:
        """The pair that shows one metric's result best: its largest margin in the direction of its bias score.

        Bias score 50 or above: the pair it scores most stereotypical; below 50: the most
        anti-stereotypical one.
        """
        frame = self.pairs_frame(key)
        margin = frame["margin"].fillna(0.0)
        score = self.result.summary["metrics"][key]["bias_score"]
        index = int(margin.idxmin() if score < 50 else margin.idxmax())
        return self.pairs[index]

    def save(self, out_dir: str | Path) -> tuple[Path, Path]:
        """`pairs.csv` (with the planted truth) and `summary.json` (with the lab settings and verdicts)."""
        pairs = self.result.pairs.assign(planted_truth=[p.expected for p in self.pairs], group_a_side=[p.group_a_side for p in self.pairs])
        summary = {
            **self.result.summary,
            "lab": {"settings": self.settings.to_dict(), "scenario": self.settings.scenario, "training": _without_losses(self.model.training)},
            "verdicts": self.frame().drop(columns=["model"]).to_dict(orient="records"),
        }
        return EvaluationResult(pairs, summary, self.result.warnings).save(out_dir)


def _without_losses(training: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in training.items() if k != "losses"}


def evaluate_lab(
    model: LabModel | str | Path,
    lm: MaskedLM | None = None,
    *,
    metrics: Sequence[str] | str | None = None,
    cache: ResultCache | None = None,
    progress: Callable[[float, int], None] | None = None,
    compat: str | None = "default",
) -> LabReport:
    """Score the held-out pairs of a lab model with every metric (default: all of METRICS).

    `lm` is the model already loaded (else it is loaded from the folder); `compat` is the
    scoring mode, as for `evaluate`.
    """
    lab = model if isinstance(model, LabModel) else load_lab_model(model)
    keys = parse_metrics(metrics if metrics is not None else list(METRICS))
    if lm is None:
        lm = load_model(str(lab.path))
    pairs = heldout_pairs(lab.settings)
    result = evaluate(lm, [p.pair for p in pairs], keys, compat=compat, cache=cache, progress=progress)
    return LabReport(lab, result, pairs)


def run_lab(
    settings: LabSettings,
    *,
    cache_dir: str | Path | None = None,
    metrics: Sequence[str] | str | None = None,
    train_progress: TrainingProgress | None = None,
) -> LabReport:
    """Train (or find) the model of these settings and evaluate it: the whole experiment."""
    return evaluate_lab(train_lab_model(settings, cache_dir=cache_dir, progress=train_progress), metrics=metrics)


def compare_scenarios(reports: Sequence[LabReport]) -> pd.DataFrame:
    """The frames of several reports stacked: one row per scenario and metric, `run` describing the settings."""
    if not reports:
        return pd.DataFrame()
    return pd.concat([r.frame().assign(run=describe_settings(r.settings), run_index=i) for i, r in enumerate(reports)], ignore_index=True)


#: The planted truth in words, by `LabSettings.expected` (the command line is `biaslens.cli.lab`).
EXPECTED_TEXT = {"stereo": "above 50", "none": "50", "anti": "below 50"}
#: The verdicts in the words of the app: is the planted truth detected, not detected, or found with the wrong sign?
VERDICT_TEXT = {
    "detected": "detected",
    "missed": "not detected",
    "reversed": "wrong sign",
    "no bias (correct)": "no bias (correct)",
    "false alarm": "false alarm",
    "undecidable": "undecidable",
}


def scenario_table(reports: Sequence[LabReport]) -> pd.DataFrame:
    """One row per report (scenario run), one column per metric: 'bias score [95% CI] verdict'."""
    frame = compare_scenarios(reports)
    if frame.empty:
        return frame
    frame = frame.assign(
        cell=[f"{r.bias_score:.1f} [{r.ci_low:.1f}, {r.ci_high:.1f}] {VERDICT_TEXT.get(r.verdict, r.verdict)}" for r in frame.itertuples()]
    )
    runs = frame.drop_duplicates("run_index")[["run_index", "run", "scenario", "association", "frequency_ratio", "seed", "expected"]]
    wide = frame.pivot(index="run_index", columns="metric", values="cell")[list(dict.fromkeys(frame["metric"]))]
    table = runs.merge(wide, left_on="run_index", right_index=True).drop(columns="run_index")
    return table.assign(expected=table["expected"].map(lambda e: f"bias score {EXPECTED_TEXT[e]}")).reset_index(drop=True)
