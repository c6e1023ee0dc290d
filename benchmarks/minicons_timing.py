"""minicons' own speed, for benchmarks/bench_scoring.py: run in the peer environment (.venv-peers), never in biaslens's.

Reads a JSON request on stdin: {"model", "kind": "masked" | "causal", "texts", "batches": [sizes], "threads"}, and
writes {"runs": [[batch size, seconds], ...], "logprob": [per text, per token]} (the token log-probabilities of the
first run, to check that both sides computed the same thing). Each setting scores every text with
`token_score` (masked: PLL_metric="original"; causal: bos_token=True), the texts cut into batches of that size,
after one warm-up batch. The shim transformers 5 needs is tests/peers/run_minicons.py's (batch_encode_plus).
"""

from __future__ import annotations

import json
import sys
import time

import torch
from transformers.tokenization_utils_base import PreTrainedTokenizerBase

if not hasattr(PreTrainedTokenizerBase, "batch_encode_plus"):
    PreTrainedTokenizerBase.batch_encode_plus = lambda self, text, **kw: self(list(text), **kw)

from minicons import scorer  # noqa: E402


def main() -> None:
    request = json.load(sys.stdin)
    torch.set_num_threads(int(request["threads"]))
    texts = request["texts"]
    if request["kind"] == "masked":
        model = scorer.MaskedLMScorer(request["model"], "cpu")
        kwargs = {"PLL_metric": "original"}
    else:
        model = scorer.IncrementalLMScorer(request["model"], "cpu")
        kwargs = {"bos_token": True}
    runs, logprob = [], None
    for size in request["batches"]:
        model.token_score(texts[:size], **kwargs)  # warm-up
        start = time.perf_counter()
        found = []
        for at in range(0, len(texts), size):
            found += model.token_score(texts[at : at + size], **kwargs)
        runs.append([size, time.perf_counter() - start])
        if logprob is None:
            logprob = [[score for _, score in text] for text in found]
    json.dump({"runs": runs, "logprob": logprob}, sys.stdout)


if __name__ == "__main__":
    main()
