"""`biaslens shuffle`: one sentence's tokens before and after shuffling (Kaneko & Bollegala 2022, Table 4; `biaslens.shuffle`)."""

from __future__ import annotations

import argparse
import json
from typing import Any

import pandas as pd

from ..options import ModelSpec
from .common import COMMANDS, add_model_args, load


def register(sub: Any) -> argparse.ArgumentParser:
    shu = sub.add_parser("shuffle", help=COMMANDS["shuffle"])
    add_model_args(shu)
    add_shuffle_arguments(shu).set_defaults(func=cmd_shuffle)
    return shu


def add_shuffle_arguments(p: Any) -> Any:
    """Options of `biaslens shuffle` besides the model ones (argparse); returns the parser."""
    p.add_argument("sentence", help="the sentence to shuffle")
    p.add_argument("--seed", type=int, default=0, help="shuffle seed (the same sentence and seed always shuffle alike)")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    return p


def cmd_shuffle(args: Any) -> int:
    """One sentence's tokens before and after shuffling, with log p, rank and the model's top token."""
    from ..export import json_safe
    from ..sentences import check_sentence
    from ..shuffle import shuffle_sentence

    check_sentence(args.sentence)  # before the model loads
    result = shuffle_sentence(load(ModelSpec.from_args(args)), args.sentence, args.seed)
    if args.json:
        out = {
            "seed": result.seed,
            "shuffled": result.shuffled.text,
            "accuracy": result.accuracy(),
            "shuffled_accuracy": result.accuracy(True),
            "tokens": result.tokens.to_dict(orient="records"),
        }
        print(json.dumps(json_safe(out), indent=2, ensure_ascii=False))
        return 0
    print(f"original: {args.sentence}\nshuffled: {result.shuffled.text}  (seed {result.seed})\n")
    with pd.option_context("display.width", 200, "display.max_rows", 600):
        print(result.tokens.to_string(index=False, float_format=lambda v: f"{v:.4f}"))
    print(f"\nAUL token accuracy: {result.accuracy():.1f}% original, {result.accuracy(True):.1f}% shuffled (non-special tokens)")
    return 0


__all__ = ["add_shuffle_arguments", "cmd_shuffle", "register"]
