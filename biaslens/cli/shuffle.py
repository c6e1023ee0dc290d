"""`biaslens shuffle`: one sentence's tokens before and after shuffling (Kaneko & Bollegala 2022, Table 4; `biaslens.analyses.shuffle`)."""

from __future__ import annotations

import argparse
import json
from typing import Any

import pandas as pd

from biaslens.engine.options import ModelSpec
from biaslens.cli.common import add_command, load, seed_int


def register(sub: Any) -> argparse.ArgumentParser:
    return add_command(sub, "shuffle", cmd_shuffle, add_shuffle_arguments)


def add_shuffle_arguments(p: Any) -> Any:
    """Options of `biaslens shuffle` besides the model ones (argparse); returns the parser."""
    p.add_argument("sentence", help="the sentence to shuffle")
    p.add_argument("--seed", type=seed_int, default=0, help="shuffle seed (the same sentence and seed always shuffle alike)")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    return p


def cmd_shuffle(args: Any) -> int:
    """One sentence's tokens before and after shuffling, with log p, rank and the model's top token."""
    from biaslens.data.export import json_safe
    from biaslens.data.sentences import check_sentence
    from biaslens.analyses.shuffle import shuffle_sentence

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
