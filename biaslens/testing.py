"""Random-weight masked LMs with real tokenizers, for tests and benchmarks.

No pretrained weights are needed: a model is built from a config with random weights,
paired with a real tokenizer read from a folder of tokenizer files, and saved with
`save_pretrained`, so it loads through `biaslens.load_model` like any local model.
Random weights make scores meaningless but shapes, alignment, batching, caching and the
UI fully testable.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

#: Model sizes: (hidden, layers, heads, intermediate).
SIZES: dict[str, tuple[int, int, int, int]] = {
    "tiny": (32, 2, 2, 64),
    "small": (128, 4, 4, 512),
    "base": (768, 12, 12, 3072),
    "large": (1024, 24, 16, 4096),
}

FAMILIES = ("bert-cased", "bert-uncased", "roberta", "albert")


def build_tokenizer(family: str, tokenizer_dir: str | Path) -> Any:
    """A real tokenizer from its files (vocab.txt, vocab.json + merges.txt, or spiece.model)."""
    from transformers import AutoTokenizer, BertTokenizer, RobertaTokenizer

    folder = Path(tokenizer_dir)
    if family in ("bert-cased", "bert-uncased"):
        # BertTokenizerFast(vocab_file=...) silently ignores the file in transformers 5.
        return BertTokenizer(vocab=str(folder / "vocab.txt"), do_lower_case=family == "bert-uncased")
    if family == "roberta":
        return RobertaTokenizer(vocab=str(folder / "vocab.json"), merges=str(folder / "merges.txt"))
    if family == "albert":
        return AutoTokenizer.from_pretrained(str(folder))
    raise ValueError(f"unknown family {family!r}; choose from {FAMILIES}")


def build_config(family: str, size: str = "tiny", **overrides: Any) -> Any:
    from transformers import AlbertConfig, BertConfig, RobertaConfig

    hidden, layers, heads, intermediate = SIZES[size]
    common = dict(
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        intermediate_size=intermediate,
        max_position_embeddings=512,
    )
    if family == "bert-cased":
        config = BertConfig(vocab_size=28996, **common)
    elif family == "bert-uncased":
        config = BertConfig(vocab_size=30522, **common)
    elif family == "roberta":
        # The shared vocab.json lacks three unused entries; the real model has 50,265 rows.
        config = RobertaConfig(
            vocab_size=50265, pad_token_id=1, bos_token_id=0, eos_token_id=2, type_vocab_size=1, **{**common, "max_position_embeddings": 514}
        )
    elif family == "albert":
        config = AlbertConfig(vocab_size=30000, embedding_size=min(128, hidden), **common)
    else:
        raise ValueError(f"unknown family {family!r}; choose from {FAMILIES}")
    for key, value in overrides.items():
        setattr(config, key, value)
    return config


def build_random_model(
    family: str, tokenizer_dir: str | Path, out_dir: str | Path, *, size: str = "tiny", seed: int = 0, **overrides: Any
) -> Path:
    """Build, seed and save a random-weight masked LM with a real tokenizer; return the folder."""
    from transformers import AutoModelForMaskedLM

    torch.manual_seed(seed)
    model = AutoModelForMaskedLM.from_config(build_config(family, size, **overrides))
    out = Path(out_dir)
    model.save_pretrained(out)
    build_tokenizer(family, tokenizer_dir).save_pretrained(out)
    return out


__all__ = ["FAMILIES", "SIZES", "build_config", "build_random_model", "build_tokenizer"]
