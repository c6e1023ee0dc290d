"""A tiny FNet: a real masked-LM architecture without attention (AULA must be switched off for it)."""

from __future__ import annotations

from pathlib import Path


def build_fnet(folder: Path) -> Path:
    """A tiny FNet (token mixing by Fourier transforms: no attention, and it ignores the attention mask), saved in `folder`."""
    import torch
    from transformers import AutoModelForMaskedLM, FNetConfig

    from biaslens.engine.testing import train_tokenizer

    tokenizer = train_tokenizer("deberta-v3")  # [CLS] ... [SEP] SentencePiece, as FNet's own
    torch.manual_seed(0)
    config = FNetConfig(
        vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=2, intermediate_size=64, pad_token_id=tokenizer.pad_token_id, type_vocab_size=4
    )
    AutoModelForMaskedLM.from_config(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder
