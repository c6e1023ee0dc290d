"""The tokenizer and the small language model trained on a lab corpus (deterministic for a seed).

A masked lab model is a small BERT trained with the masked-LM objective (the group word or the attribute hidden in
every sentence); a causal one (`LabSettings.kind` "causal") a small GPT-2 trained to predict every next token of
`[CLS] sentence [SEP]`, `[CLS]` being its BOS token. Same corpus, tokenizer, optimiser and seed.
"""

from __future__ import annotations

import string
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np
import torch

from biaslens.errors import InputError
from biaslens.lab.corpus import LabSentence
from biaslens.lab.settings import LabSettings

SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")


#: step, total steps, the training loss so far (`smoothed_loss`: at the last step, the final loss reported)
TrainingProgress = Callable[[int, int, float], None]


def loss_window(steps: int) -> int:
    """How many of the last steps the reported training loss averages: 5% of them, at least one."""
    return max(1, steps // 20)


def smoothed_loss(losses: Sequence[float], steps: int) -> float:
    """The training loss reported: the mean loss of the last `loss_window(steps)` steps (one batch's loss is noisy).

    During training it is the mean of the latest steps so far; after the last step it is the final loss.
    """
    return float(np.mean(losses[-loss_window(steps) :]))


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


def _sizes(settings: LabSettings, vocab_size: int, pad_id: int) -> dict[str, Any]:
    """The sizes both architectures take, by the names both configs read (GPT-2's maps them onto n_embd, n_layer, n_head)."""
    h, layers, heads = settings.hidden_size, settings.num_layers, settings.num_heads
    return dict(vocab_size=vocab_size, hidden_size=h, num_hidden_layers=layers, num_attention_heads=heads, pad_token_id=pad_id)


def _gpt2(settings: LabSettings, vocab_size: int, pad_id: int) -> Any:
    from transformers import GPT2Config, GPT2LMHeadModel

    inner, bos, eos = 4 * settings.hidden_size, SPECIAL_TOKENS.index("[CLS]"), SPECIAL_TOKENS.index("[SEP]")
    no_dropout: dict[str, Any] = dict(resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
    sizes = _sizes(settings, vocab_size, pad_id)
    return GPT2LMHeadModel(GPT2Config(**sizes, n_inner=inner, n_positions=MAX_LENGTH, bos_token_id=bos, eos_token_id=eos, **no_dropout))


def _bert(settings: LabSettings, vocab_size: int, pad_id: int) -> Any:
    from transformers import BertConfig, BertForMaskedLM

    no_dropout: dict[str, Any] = dict(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    sizes = _sizes(settings, vocab_size, pad_id)
    return BertForMaskedLM(
        BertConfig(**sizes, intermediate_size=4 * settings.hidden_size, max_position_embeddings=MAX_LENGTH, type_vocab_size=1, **no_dropout)
    )


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


def _masked_loss(model: Any, corpus: _EncodedCorpus, rows: Any, mask_id: int, vocab_size: int, gen: Any) -> Any:
    """Masked-LM loss of a batch (`_masked_batch`): only the chosen positions go through the vocabulary projection (much faster)."""
    inputs, attention, chosen, targets = _masked_batch(corpus, rows, mask_id, vocab_size, gen)
    hidden = model.bert(input_ids=inputs, attention_mask=attention).last_hidden_state
    return torch.nn.functional.cross_entropy(model.cls(hidden[chosen]), targets)


def _causal_loss(model: Any, corpus: _EncodedCorpus, rows: Any, mask_id: int, vocab_size: int, gen: Any) -> Any:
    """Next-token loss of a batch: every token after [CLS] (its BOS), [SEP] included, from the tokens before it."""
    width = int(corpus.lengths[rows].max())
    ids = corpus.ids[rows, :width]
    attention = (ids != corpus.pad_id).long()
    hidden = model.transformer(input_ids=ids, attention_mask=attention).last_hidden_state
    real = attention[:, 1:].bool()  # a target that is padding is not predicted
    return torch.nn.functional.cross_entropy(model.lm_head(hidden[:, :-1][real]), ids[:, 1:][real])


@dataclass(frozen=True)
class _Recipe:
    """How a lab model of one kind (`LabSettings.kind`) is made: its network, its training loss, what its tokenizer names."""

    build: Callable[[LabSettings, int, int], Any]  # (settings, vocabulary size, pad id) -> an untrained model
    loss: Callable[..., Any]  # (model, corpus, rows, mask id, vocabulary size, generator) -> the batch's loss
    #: The tokenizer's special tokens the model reads by (a causal model reads after its BOS, [CLS]).
    tokenizer_specials: dict[str, str]


#: The recipe of each kind of lab model: a small BERT (masked-LM objective) or a small GPT-2 (next-token objective).
RECIPES: dict[str, _Recipe] = {
    "masked": _Recipe(_bert, _masked_loss, {}),
    "causal": _Recipe(_gpt2, _causal_loss, {"bos_token": "[CLS]", "eos_token": "[SEP]"}),
}


def _train(
    settings: LabSettings, corpus: _EncodedCorpus, vocab_size: int, mask_id: int, progress: TrainingProgress | None
) -> tuple[Any, list[float]]:
    """A freshly initialised model (seeded) trained on the corpus; returns it and the loss of every step."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(settings.seed)
        model = RECIPES[settings.kind].build(settings, vocab_size, corpus.pad_id)
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
    recipe = RECIPES[settings.kind]
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
        loss = recipe.loss(model, corpus, rows, mask_id, vocab_size, gen)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        schedule.step()
        losses.append(loss.item())
        if progress is not None:
            progress(step + 1, settings.steps, smoothed_loss(losses, settings.steps))
    return model.eval(), losses
