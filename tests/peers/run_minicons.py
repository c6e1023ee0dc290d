"""Runs minicons in the peer environment (.venv-peers, built by scripts/peers.sh), never in biaslens's own.

Reads a JSON request on stdin: {"calls": [{"id", "scorer": "masked" | "incremental", "model": folder, "method",
"args": [...], "kwargs": {...}}]} and writes {id: result} as JSON on stdout. `reduction` ("mean" or "sum") and
`tokenize_function` ("split" or "regex") are given by name and made into minicons' callables here.

The shim transformers 5 needs: minicons 0.3.39 calls `tokenizer.batch_encode_plus`, which transformers 5 removed;
it is put back as the tokenizer's own call (what it always did for a list of texts). Nothing else is changed.
"""

from __future__ import annotations

import json
import re
import sys

from transformers.tokenization_utils_base import PreTrainedTokenizerBase

if not hasattr(PreTrainedTokenizerBase, "batch_encode_plus"):  # the shim (module docstring)
    PreTrainedTokenizerBase.batch_encode_plus = lambda self, text, **kw: self(list(text), **kw)

from minicons import scorer  # noqa: E402

REDUCTIONS = {"mean": lambda x: x.mean(0).item(), "sum": lambda x: x.sum(0).item()}
TOKENIZERS = {"split": str.split, "regex": lambda s: re.findall(r"\w+|[^\w\s]+", s)}


def plain(value):
    """Tensors, tuples and numbers as JSON."""
    if hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


def main() -> None:
    request = json.load(sys.stdin)
    scorers: dict = {}
    out = {}
    for call in request["calls"]:
        key = (call["scorer"], call["model"])
        if key not in scorers:
            kind = scorer.MaskedLMScorer if call["scorer"] == "masked" else scorer.IncrementalLMScorer
            scorers[key] = kind(call["model"], "cpu")
        kwargs = dict(call.get("kwargs", {}))
        if "reduction" in kwargs:
            kwargs["reduction"] = REDUCTIONS[kwargs["reduction"]]
        if "tokenize_function" in kwargs:
            kwargs["tokenize_function"] = TOKENIZERS[kwargs["tokenize_function"]]
        out[call["id"]] = plain(getattr(scorers[key], call["method"])(*call.get("args", []), **kwargs))
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
