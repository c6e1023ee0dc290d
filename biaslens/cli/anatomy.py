"""`biaslens anatomy`: where a pair's bias lives: attribution, the logit lens and the heads (biaslens.anatomy).

Writes attribution.csv, logit_lens.csv, heads.csv and summary.json into --out and prints what a reader looks at first:
the margin, the completeness error of the attributions, the shared tokens that push the stereotyped sentence most, the
margin per layer and the heads whose ablation moves it most.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from biaslens.cli.common import COMMANDS, add_model_args, load, model_caveats
from biaslens.engine.options import ModelSpec


def register(sub: Any) -> argparse.ArgumentParser:
    p = sub.add_parser("anatomy", help=COMMANDS["anatomy"])
    add_model_args(p)
    p.add_argument("stereo", help="the stereotypical (more biased) sentence")
    p.add_argument("anti", help="the anti-stereotypical (less biased) sentence")
    p.add_argument("--out", required=True, help="output folder: attribution.csv, logit_lens.csv, heads.csv, summary.json")
    p.add_argument("--metric", default=None, help="the score taken apart: aul (masked models, default), ll (causal, default) or aul_c")
    p.add_argument("--steps", type=int, default=64, help="integrated gradients' Gauss-Legendre points (default 64)")
    p.add_argument("--top", type=int, default=5, help="rows printed per table (default 5)")
    p.set_defaults(func=cmd_anatomy)
    return p


def cmd_anatomy(args: argparse.Namespace) -> int:
    import pandas as pd

    from biaslens.anatomy.attribution import check_steps
    from biaslens.anatomy.pair import anatomize, settling_layer
    from biaslens.data.sentences import check_pair
    from biaslens.figures.formatting import format_margin

    check_pair(args.stereo, args.anti)  # before the model loads
    check_steps(args.steps)
    lm = load(ModelSpec.from_args(args))
    caveats = model_caveats(lm, [args.stereo, args.anti])
    result = anatomize(lm, args.stereo, args.anti, metric=args.metric, n_steps=args.steps)
    result.manifest.update(caveats)
    written = result.save(args.out)
    name = result.metric.upper().replace("_C", "-c")
    top = max(1, int(args.top))
    print(f"{name} margin (stereo - anti): {format_margin(result.margin)}")
    for row in result.attribution.completeness().to_dict("records"):
        print(
            f"integrated gradients, {row['sentence']}: sum {row['attribution_sum']:.4f} vs f(x) - f(baseline) "
            f"{row['score'] - row['baseline_score']:.4f} (completeness error {row['completeness_error']:+.2e}, {row['n_steps']} steps)"
        )
    diff = result.attribution.difference().sort_values("difference", key=abs, ascending=False).head(top)
    margins = result.lens.margins
    heads = result.heads.frame().head(top)
    with pd.option_context("display.width", 200, "display.max_colwidth", 40, "display.float_format", "{:.4f}".format):
        print("\nshared tokens, attribution stereo - anti (integrated gradients):")
        print(diff.assign(token=diff["text"])[["token", "stereo", "anti", "difference"]].to_string(index=False))  # as the text it covers
        print(f"\nmargin per layer (0 = embeddings): {' '.join(format_margin(m) for m in margins)}")
        print(f"the margin keeps its final sign from layer {settling_layer(margins)} of {len(margins) - 1}")
        print("\nheads whose ablation moves the margin most (layer, head from 0):")
        print(heads.to_string(index=False))
    print(f"\nwrote {', '.join(p.name for p in written)} to {args.out}", file=sys.stderr)
    return 0


__all__ = ["cmd_anatomy", "register"]
