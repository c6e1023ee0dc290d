"""`biaslens inspect`: one sentence pair, token by token (with each token's top-5 predictions, as tokens)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from biaslens.engine.options import ModelSpec, RunOptions
from biaslens.cli.common import COMMANDS, add_compat_arg, add_model_args, load, model_caveats


def register(sub: Any) -> argparse.ArgumentParser:
    from biaslens.engine.metrics import PAPER_METRICS

    ins = sub.add_parser("inspect", help=COMMANDS["inspect"])
    add_model_args(ins)
    ins.add_argument("stereo", help="the stereotypical (more biased) sentence")
    ins.add_argument("anti", help="the anti-stereotypical (less biased) sentence")
    ins.add_argument("--metrics", default=None, help=f"comma-separated (default: {','.join(PAPER_METRICS)}, less any the model cannot give)")
    add_compat_arg(ins)
    ins.add_argument("--json", action="store_true", help="print JSON instead of tables")
    ins.set_defaults(func=cmd_inspect)
    return ins


def cmd_inspect(args: argparse.Namespace) -> int:
    from biaslens.engine.evaluation import inspect_pair
    from biaslens.figures.formatting import format_margin
    from biaslens.data.sentences import check_pair

    run = RunOptions.from_args(args)
    check_pair(args.stereo, args.anti)  # before the model loads
    lm = load(ModelSpec.from_args(args))
    caveats = model_caveats(lm, [args.stereo, args.anti])
    metrics = None if args.metrics is None else list(run.metrics)  # None: the paper's five, less what the model cannot give
    result = inspect_pair(lm, args.stereo, args.anti, metrics=metrics, compat=run.compat.value)
    for note in result.notes:
        print(f"note: {note}", file=sys.stderr)
    scores = result.summary_frame()
    sides = [("stereotypical", result.stereo), ("anti-stereotypical", result.anti)]
    frames = [detail.token_frame() for _label, detail in sides]  # top_tokens: the predictions as tokens, top_ids: their ids
    if args.json:
        out = {
            "scores": scores.to_dict(orient="records"),
            "stereo_tokens": frames[0].drop(columns=["top_logprobs"]).to_dict(orient="records"),
            "anti_tokens": frames[1].drop(columns=["top_logprobs"]).to_dict(orient="records"),
            "manifest": {**result.manifest, **caveats},
        }
        print(json.dumps(out, indent=2, default=lambda v: None if v != v else str(v)))
        return 0
    import pandas as pd

    from biaslens.engine.metrics import METRICS

    with pd.option_context("display.width", 200, "display.max_columns", 20, "display.max_rows", 600, "display.max_colwidth", 60):
        for (label, detail), frame in zip(sides, frames):
            # Each token as the text it covers ("café", not "ĠcafÃ©"), its predictions as the text each stands for, and the
            # per-token log p of each metric scored (a causal model's CPS-c, never a masked metric's column of NaN).
            frame = frame.assign(token=frame["text"], top5=[" ".join(row[:5]) for row in frame["top_texts"]])
            per_metric = [str(m.token_column) for k, m in METRICS.items() if k in result.metrics and m.token_column in frame]
            cols = ["position", "token", "modified", "logprob", "rank", "attention", "aula_contribution", *per_metric, "top5"]
            print(f"\n{label}: {detail.encoding.text}")
            frame = frame.assign(rank=[f"{r:.0f}" if r == r else "—" for r in frame["rank"]])  # a dash where nothing predicts the token
            print(frame[cols].to_string(index=False, float_format=lambda v: f"{v:.4f}"))
        print()
        # The margin with the digits its sign needs: never -0.0000 beside the verdict "anti".
        # The metric by its name only (`key`, its internal name, is in --json's output).
        print(scores.drop(columns=["key"]).to_string(index=False, float_format=lambda v: f"{v:.4f}", formatters={"margin": format_margin}))
    return 0


__all__ = ["cmd_inspect", "register"]
