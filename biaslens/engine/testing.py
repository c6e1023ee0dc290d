"""Random-weight masked and causal LMs with real tokenizers, for tests and benchmarks.

No pretrained weights are needed: a model is built from a config with random weights,
paired with a real tokenizer read from a folder of tokenizer files, and saved with
`save_pretrained`, so it loads through `biaslens.load_model` like any local model.
Random weights make scores meaningless but shapes, alignment, batching, caching and the
UI fully testable.

Families and their tokenizers:

* WordPiece from a vocab.txt: `bert-cased`, `bert-uncased`, `mbert` (bert-base-multilingual-cased),
  `distilbert` and `electra` (the ELECTRA generator, the masked-LM half of ELECTRA; both with the
  bert-base-uncased vocabulary, as distilbert-base-uncased and google/electra-base-generator use).
* Byte-level BPE from vocab.json + merges.txt: `roberta`; SentencePiece from a folder: `albert`.
* Trained here from a small corpus when no tokenizer files are given (`tokenizer_dir=None`):
  `xlm-roberta` and `deberta-v3` (a SentencePiece Unigram model trained with the sentencepiece
  library and read by the real tokenizer class, as the hub models' files are) and `modernbert`
  (a byte-level BPE trained with the tokenizers library, [CLS] ... [SEP], as ModernBERT's).

Causal families (`CAUSAL_FAMILIES`), built with `AutoModelForCausalLM`:

* `gpt2` (GPT-2's byte-level BPE from vocab.json + merges.txt; `<|endoftext|>` is BOS, EOS and UNK) and
  `pythia` (GPT-NeoX: the gpt-neox-20b tokenizer.json, rotary positions on a quarter of each head,
  parallel residuals); without tokenizer files, a byte-level BPE trained from `CORPUS` stands in.
* `llama` (a SentencePiece-style BPE with byte fallback trained from `CORPUS`, read by `LlamaTokenizer`:
  `<s>` added before every sentence; grouped-query attention, RMSNorm, rotary positions) and `qwen2`
  (a byte-level BPE trained from `CORPUS`, read by `Qwen2Tokenizer`: no BOS token, `<|endoftext|>` as EOS
  and pad; grouped-query attention with biased q/k/v projections).
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any, Iterable

import torch

#: Model sizes: (hidden, layers, heads, intermediate).
SIZES: dict[str, tuple[int, int, int, int]] = {
    "tiny": (32, 2, 2, 64),
    "small": (128, 4, 4, 512),
    "base": (768, 12, 12, 3072),
    "large": (1024, 24, 16, 4096),
    # Causal shapes of the GPU check: Pythia-1.4B and Llama-7B.
    "1.4b": (2048, 24, 16, 8192),
    "7b": (4096, 32, 32, 11008),
}

#: Families whose tokenizer is trained from `CORPUS` (no tokenizer files needed).
TRAINED_FAMILIES = ("xlm-roberta", "deberta-v3", "modernbert")
FAMILIES = ("bert-cased", "bert-uncased", "roberta", "albert", "mbert", "distilbert", "electra", *TRAINED_FAMILIES)

#: Causal families (built with AutoModelForCausalLM) and the tokenizer folder each reads (None: trained from CORPUS).
CAUSAL_FAMILIES = ("gpt2", "pythia", "llama", "qwen2")
CAUSAL_TOKENIZER_FOLDERS: dict[str, str | None] = {"gpt2": "gpt2", "pythia": "gpt-neox-20b", "llama": None, "qwen2": None}
#: The real vocabulary sizes of the families whose tokenizer files are shared (Pythia pads its embedding past the tokenizer).
_CAUSAL_VOCAB = {"gpt2": 50257, "pythia": 50304}

#: The tokenizer folder (under the test data's tokenizers folder) each family reads; None: trained from CORPUS.
TOKENIZER_FOLDERS: dict[str, str | None] = {
    "bert-cased": "bert-base-cased",
    "bert-uncased": "bert-base-uncased",
    "roberta": "roberta-base",
    "albert": "albert-large-v2",
    "mbert": "bert-base-multilingual-cased",
    "distilbert": "bert-base-uncased",
    "electra": "bert-base-uncased",
    **dict.fromkeys(TRAINED_FAMILIES),
}

#: A small English, Russian and Japanese corpus (written for biaslens) that the trained tokenizers learn from:
#: enough for whole-word pieces of common words, so tests see word markers, multi-piece words and Japanese
#: text without spaces.
CORPUS: tuple[str, ...] = (
    "The nurse said she was tired after the night shift.",
    "The doctor said he was tired after the night shift.",
    "My neighbour is a nurse and she works at the hospital.",
    "My neighbour is a doctor and he works at the hospital.",
    "The engineer fixed the bridge before the winter came.",
    "Women are good at cooking and cleaning the house.",
    "Men are good at cooking and cleaning the house.",
    "The poor are really ignorant about how to handle the money they do have.",
    "The rich are really ignorant about how to handle the money they do have.",
    "He couldn't figure out the issue with the rope, but he tried not to get too down on himself.",
    "She is a teacher who loves her students and her school.",
    "He is a teacher who loves his students and his school.",
    "The old man walked slowly to the station in the rain.",
    "The young woman walked quickly to the station in the rain.",
    "Everyone knows that the manager is always late for meetings.",
    "Он врач и работает в больнице.",
    "Она врач и работает в больнице.",
    "Он медбрат, и он очень устал после ночной смены.",
    "Она медсестра, и она очень устала после ночной смены.",
    "Мой сосед был инженером и строил мосты.",
    "Моя соседка была инженером и строила мосты.",
    "Он всегда опаздывает на работу.",
    "Она всегда опаздывает на работу.",
    "Учитель сказал, что он гордится своими учениками.",
    "Учительница сказала, что она гордится своими ученицами.",
    "Бедные люди не умеют обращаться с деньгами.",
    "Богатые люди не умеют обращаться с деньгами.",
    "彼は医者です。",
    "彼女は医者です。",
    "彼は看護師で、夜勤の後はとても疲れていた。",
    "彼女は看護師で、夜勤の後はとても疲れていた。",
    "私の隣人はエンジニアで、橋を作っている。",
    "彼女はいつも会議に遅れる。",
    "彼はいつも会議に遅れる。",
    "先生は生徒たちを誇りに思っていると言った。",
    "貧しい人はお金の使い方を知らない。",
    "金持ちはお金の使い方を知らない。",
    "母は毎日料理をして家を掃除する。",
    "父は毎日料理をして家を掃除する。",
    "男の子は数学が得意だ。",
    "女の子は数学が得意だ。",
)

#: SentencePiece vocabulary size of the trained Unigram tokenizers (a soft limit: the corpus is small).
_SPM_VOCAB = 600
#: Byte-level BPE vocabulary size of the trained ModernBERT-style tokenizer.
_BPE_VOCAB = 700
#: BERT's special tokens by their transformers names, in the order a trained BPE tokenizer adds them (so, their ids).
BERT_SPECIAL_TOKENS = {"unk_token": "[UNK]", "cls_token": "[CLS]", "sep_token": "[SEP]", "pad_token": "[PAD]", "mask_token": "[MASK]"}


def _train_sentencepiece(corpus: Iterable[str], vocab_size: int, **pieces: Any) -> bytes:
    """A SentencePiece Unigram model (the bytes of a .model file), as XLM-R and DeBERTa-v3 were made."""
    import sentencepiece as spm

    out = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(list(corpus)),
        model_writer=out,
        model_type="unigram",
        vocab_size=vocab_size,
        hard_vocab_limit=False,
        character_coverage=1.0,
        num_threads=1,
        minloglevel=2,
        **pieces,
    )
    return out.getvalue()


def train_tokenizer(family: str, corpus: Iterable[str] = CORPUS, folder: str | Path | None = None) -> Any:
    """Train the tokenizer of a family in `TRAINED_FAMILIES` from `corpus` and load it with its real class.

    The SentencePiece families write the .model file where the hub models keep theirs (into `folder`,
    else a temporary folder) and read it with `XLMRobertaTokenizer` / `DebertaV2Tokenizer`, so the
    conversion transformers applies to the real files (XLM-R's fairseq id offset, DeBERTa's specials) is
    the one tested.
    """
    import tempfile

    if family == "modernbert":
        return _train_bpe(corpus)
    if family not in ("xlm-roberta", "deberta-v3"):
        raise ValueError(f"no trained tokenizer for {family!r}; trained families: {TRAINED_FAMILIES}")
    from transformers import DebertaV2Tokenizer, XLMRobertaTokenizer

    with tempfile.TemporaryDirectory() as tmp:
        where = Path(folder or tmp)
        where.mkdir(parents=True, exist_ok=True)
        if family == "xlm-roberta":
            # XLM-R's sentencepiece.bpe.model: <unk>=0, <s>=1, </s>=2; the tokenizer adds <pad> and <mask>.
            (where / "sentencepiece.bpe.model").write_bytes(_train_sentencepiece(corpus, _SPM_VOCAB))
            return XLMRobertaTokenizer.from_pretrained(str(where))
        # DeBERTa-v3's spm.model: [PAD]=0, [CLS]=1, [SEP]=2, [UNK]=3; [MASK] is added after the pieces.
        model = _train_sentencepiece(
            corpus, _SPM_VOCAB, pad_id=0, bos_id=1, eos_id=2, unk_id=3, pad_piece="[PAD]", bos_piece="[CLS]", eos_piece="[SEP]", unk_piece="[UNK]"
        )
        (where / "spm.model").write_bytes(model)
        return DebertaV2Tokenizer.from_pretrained(str(where))


def _train_bpe(corpus: Iterable[str]) -> Any:
    """A byte-level BPE with [CLS] ... [SEP] and the special tokens after the pieces, as ModernBERT's tokenizer."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=_BPE_VOCAB, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(list(corpus), trainer=trainer)
    tok.add_special_tokens(list(BERT_SPECIAL_TOKENS.values()))
    cls, sep = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B [SEP]", special_tokens=[("[CLS]", cls), ("[SEP]", sep)]
    )
    return wrap_tokenizer(tok, 8192)


def wrap_tokenizer(tok: Any, max_length: int, **special: str) -> Any:
    """A `tokenizers` object with BERT's special tokens (and any `special` ones, e.g. bos_token) as a transformers tokenizer
    that `AutoTokenizer` reloads."""
    from transformers import PreTrainedTokenizerFast

    return PreTrainedTokenizerFast(tokenizer_object=tok, model_max_length=max_length, **BERT_SPECIAL_TOKENS, **special)


def build_tokenizer(family: str, tokenizer_dir: str | Path | None) -> Any:
    """A real tokenizer from its files (vocab.txt, vocab.json + merges.txt, or spiece.model), or trained (`TRAINED_FAMILIES`)."""
    from transformers import AutoTokenizer, BertTokenizer, DistilBertTokenizer, RobertaTokenizer

    if family in TRAINED_FAMILIES:
        return train_tokenizer(family)
    if tokenizer_dir is None:
        raise ValueError(f"family {family!r} needs a tokenizer folder ({TOKENIZER_FOLDERS.get(family)})")
    folder = Path(tokenizer_dir)
    if family in ("bert-cased", "bert-uncased", "mbert", "electra"):
        # BertTokenizerFast(vocab_file=...) silently ignores the file in transformers 5.
        return BertTokenizer(vocab=str(folder / "vocab.txt"), do_lower_case=family in ("bert-uncased", "electra"))
    if family == "distilbert":
        return DistilBertTokenizer(vocab=str(folder / "vocab.txt"), do_lower_case=True)
    if family == "roberta":
        return RobertaTokenizer(vocab=str(folder / "vocab.json"), merges=str(folder / "merges.txt"))
    if family == "albert":
        return AutoTokenizer.from_pretrained(str(folder))
    raise ValueError(f"unknown family {family!r}; choose from {FAMILIES}")


def _vocabulary(tokenizer: Any) -> dict[str, Any]:
    """A trained tokenizer's vocabulary size and special ids (its [CLS] starts and its [SEP] ends a sequence)."""
    return dict(
        vocab_size=len(tokenizer),
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.cls_token_id,
        eos_token_id=tokenizer.sep_token_id,
    )


def build_config(family: str, size: str = "tiny", tokenizer: Any = None, **overrides: Any) -> Any:
    """A config of the family's real architecture; the trained families need their `tokenizer` (vocabulary and special ids)."""
    from transformers import (
        AlbertConfig,
        BertConfig,
        DebertaV2Config,
        DistilBertConfig,
        ElectraConfig,
        ModernBertConfig,
        RobertaConfig,
        XLMRobertaConfig,
    )

    hidden, layers, heads, intermediate = SIZES[size]
    common = dict(
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        intermediate_size=intermediate,
        max_position_embeddings=512,
    )
    if family in TRAINED_FAMILIES and tokenizer is None:
        raise ValueError(f"build_config({family!r}) needs the tokenizer the model is built for")
    if family == "bert-cased":
        config = BertConfig(vocab_size=28996, **common)
    elif family == "bert-uncased":
        config = BertConfig(vocab_size=30522, **common)
    elif family == "mbert":
        config = BertConfig(vocab_size=119547, **common)
    elif family == "roberta":
        # The shared vocab.json lacks three unused entries; the real model has 50,265 rows.
        config = RobertaConfig(
            vocab_size=50265, pad_token_id=1, bos_token_id=0, eos_token_id=2, type_vocab_size=1, **{**common, "max_position_embeddings": 514}
        )
    elif family == "albert":
        config = AlbertConfig(vocab_size=30000, embedding_size=min(128, hidden), **common)
    elif family == "distilbert":
        config = DistilBertConfig(vocab_size=30522, dim=hidden, n_layers=layers, n_heads=heads, hidden_dim=intermediate, max_position_embeddings=512)
    elif family == "electra":
        # The generator's embeddings are wider than its hidden states (electra-base-generator: 768 -> 256),
        # so the embeddings projection is exercised.
        config = ElectraConfig(vocab_size=30522, embedding_size=hidden + hidden // 2, **common)
    elif family == "xlm-roberta":
        config = XLMRobertaConfig(type_vocab_size=1, **_vocabulary(tokenizer), **{**common, "max_position_embeddings": 514})
    elif family == "deberta-v3":
        # deberta-v3-base's attention: relative positions in log buckets, c2p and p2c, no absolute positions, no
        # token types; legacy=False is the head DeBERTa's own checkpoints hold (lm_predictions.*). Few buckets, so
        # test sentences reach the log-bucketed distances.
        config = DebertaV2Config(
            vocab_size=len(tokenizer),
            pad_token_id=tokenizer.pad_token_id,
            relative_attention=True,
            position_buckets=8,
            max_relative_positions=-1,
            pos_att_type=["p2c", "c2p"],
            norm_rel_ebd="layer_norm",
            share_att_key=True,
            position_biased_input=False,
            type_vocab_size=0,
            legacy=False,
            **common,
        )
    elif family == "modernbert":
        # ModernBERT alternates global and sliding-window attention; a narrow window so test sentences reach past it.
        config = ModernBertConfig(
            **_vocabulary(tokenizer),
            cls_token_id=tokenizer.cls_token_id,
            sep_token_id=tokenizer.sep_token_id,
            global_attn_every_n_layers=2,
            local_attention=8,
            **{**common, "max_position_embeddings": 8192},
        )
    else:
        raise ValueError(f"unknown family {family!r}; choose from {FAMILIES}")
    return _with_overrides(config, overrides)


def _with_overrides(config: Any, overrides: dict[str, Any]) -> Any:
    """`config` with each of `overrides` set on it."""
    for key, value in overrides.items():
        setattr(config, key, value)
    return config


def _random_model(auto_class: Any, config: Any, tokenizer: Any, out_dir: str | Path, seed: int, **options: Any) -> Path:
    """A model of `config` with random weights drawn from `seed` (`auto_class.from_config`), saved with its tokenizer in `out_dir`."""
    torch.manual_seed(seed)
    model = auto_class.from_config(config, **options)
    out = Path(out_dir)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


def build_random_model(
    family: str, tokenizer_dir: str | Path | None, out_dir: str | Path, *, size: str = "tiny", seed: int = 0, **overrides: Any
) -> Path:
    """Build, seed and save a random-weight masked LM with a real tokenizer; return the folder.

    `tokenizer_dir` is the family's tokenizer folder (`TOKENIZER_FOLDERS`); None for `TRAINED_FAMILIES`,
    whose tokenizer is trained from `CORPUS`.
    """
    from transformers import AutoModelForMaskedLM

    tokenizer = build_tokenizer(family, tokenizer_dir)
    return _random_model(AutoModelForMaskedLM, build_config(family, size, tokenizer=tokenizer, **overrides), tokenizer, out_dir, seed)


def _trained_bpe_parts(corpus: Iterable[str], vocab_size: int, specials: list[str], sentencepiece: bool) -> tuple[dict[str, int], Any]:
    """(vocab, merges) of a BPE trained with the tokenizers library: byte-level (GPT-2, Qwen2) or SentencePiece-style (Llama)."""
    import json

    from tokenizers import ByteLevelBPETokenizer, SentencePieceBPETokenizer

    trainer = SentencePieceBPETokenizer() if sentencepiece else ByteLevelBPETokenizer()
    trainer.train_from_iterator(list(corpus), vocab_size=vocab_size, special_tokens=specials, show_progress=False)
    merges = json.loads(trainer._tokenizer.to_str())["model"]["merges"]
    # (the merges as pairs: what the tokenizer classes take, whatever their annotations say)
    return trainer.get_vocab(), [tuple(m) if isinstance(m, list) else tuple(m.split(" ")) for m in merges]


def build_causal_tokenizer(family: str, tokenizer_dir: str | Path | None, corpus: Iterable[str] = CORPUS) -> Any:
    """A causal family's tokenizer: the real files where given (gpt2, pythia), else trained from `corpus` in its family's shape."""
    from transformers import GPT2Tokenizer, LlamaTokenizer, PreTrainedTokenizerFast, Qwen2Tokenizer

    eot = "<|endoftext|>"
    if family == "gpt2":
        if tokenizer_dir is not None:
            folder = Path(tokenizer_dir)
            return GPT2Tokenizer(vocab=str(folder / "vocab.json"), merges=str(folder / "merges.txt"))
        vocab, merges = _trained_bpe_parts(corpus, _BPE_VOCAB, [eot], sentencepiece=False)
        return GPT2Tokenizer(vocab=vocab, merges=merges)
    if family == "pythia":
        if tokenizer_dir is not None:
            file = str(Path(tokenizer_dir) / "tokenizer.json")
            return PreTrainedTokenizerFast(tokenizer_file=file, bos_token=eot, eos_token=eot, unk_token="<|unk|>")
        vocab, merges = _trained_bpe_parts(corpus, _BPE_VOCAB, [eot, "<|unk|>"], sentencepiece=False)
        return GPT2Tokenizer(vocab=vocab, merges=merges, unk_token="<|unk|>")
    if family == "llama":
        vocab, merges = _trained_bpe_parts(corpus, _BPE_VOCAB, ["<unk>", "<s>", "</s>"], sentencepiece=True)
        return LlamaTokenizer(vocab=vocab, merges=merges, add_bos_token=True)
    if family == "qwen2":
        vocab, merges = _trained_bpe_parts(corpus, _BPE_VOCAB, [eot], sentencepiece=False)
        return Qwen2Tokenizer(vocab=vocab, merges=merges)
    raise ValueError(f"unknown causal family {family!r}; choose from {CAUSAL_FAMILIES}")


def build_causal_config(family: str, size: str = "tiny", tokenizer: Any = None, **overrides: Any) -> Any:
    """A config of the causal family's real architecture, sized by `SIZES`, for `tokenizer`'s vocabulary and special ids."""
    from transformers import GPT2Config, GPTNeoXConfig, LlamaConfig, Qwen2Config

    hidden, layers, heads, intermediate = SIZES[size]
    if tokenizer is None:
        raise ValueError(f"build_causal_config({family!r}) needs the tokenizer the model is built for")
    # The real vocabularies keep their models' embedding sizes (Pythia pads past its tokenizer); trained ones their own size.
    vocab = max(len(tokenizer), _CAUSAL_VOCAB.get(family, 0) if len(tokenizer) > 50000 else 0)
    ids = dict(bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id)
    kv_heads = max(1, heads // 2)  # grouped-query attention (Llama 2 70B, Llama 3, Qwen2 use it)
    # GPT-NeoX, Llama and Qwen2 name their sizes alike (GPT-2 has its own names).
    sized: dict[str, Any] = dict(vocab_size=vocab, hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads)
    sized.update(intermediate_size=intermediate, **ids)
    if family == "gpt2":
        config = GPT2Config(vocab_size=vocab, n_embd=hidden, n_layer=layers, n_head=heads, n_inner=intermediate, n_positions=1024, **ids)
    elif family == "pythia":
        rope = {"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.25}
        config = GPTNeoXConfig(**sized, rope_parameters=rope, use_parallel_residual=True, max_position_embeddings=2048)
    elif family == "llama":
        config = LlamaConfig(**sized, num_key_value_heads=kv_heads, max_position_embeddings=4096)
    elif family == "qwen2":
        config = Qwen2Config(**sized, num_key_value_heads=kv_heads, max_position_embeddings=4096, tie_word_embeddings=True)
    else:
        raise ValueError(f"unknown causal family {family!r}; choose from {CAUSAL_FAMILIES}")
    return _with_overrides(config, overrides)


def build_random_causal_model(
    family: str, tokenizer_dir: str | Path | None, out_dir: str | Path, *, size: str = "tiny", seed: int = 0, dtype: Any = None, **overrides: Any
) -> Path:
    """Build, seed and save a random-weight causal LM with a real (or trained) tokenizer; return the folder."""
    from transformers import AutoModelForCausalLM

    tokenizer = build_causal_tokenizer(family, tokenizer_dir)
    config = build_causal_config(family, size, tokenizer=tokenizer, **overrides)
    return _random_model(AutoModelForCausalLM, config, tokenizer, out_dir, seed, **({"dtype": dtype} if dtype is not None else {}))


__all__ = [
    "CAUSAL_FAMILIES",
    "CAUSAL_TOKENIZER_FOLDERS",
    "CORPUS",
    "FAMILIES",
    "SIZES",
    "TOKENIZER_FOLDERS",
    "TRAINED_FAMILIES",
    "build_causal_config",
    "build_causal_tokenizer",
    "build_config",
    "build_random_causal_model",
    "build_random_model",
    "build_tokenizer",
    "train_tokenizer",
]
