"""`biaslens compare`: two models on the same pairs; bias-score differences (paired bootstrap) and McNemar's exact test on verdicts."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from biaslens.errors import InputError
from biaslens.engine.options import ModelSpec, RunOptions
from biaslens.cli.common import COMMANDS, Progress, add_compat_arg, add_model_args, add_progress_arg, fmt, load, positive_int, progress_to
from biaslens.cli.evaluate import result_cache


def register(sub: Any) -> argparse.ArgumentParser:
    from biaslens.engine.metrics import PAPER_METRICS

    p = sub.add_parser("compare", help=COMMANDS["compare"])
    add_model_args(p, several=True)
    p.add_argument("--dataset", required=True, help="a named dataset or a pairs file")
    p.add_argument("--metrics", default=",".join(PAPER_METRICS))
    add_compat_arg(p)
    p.add_argument("--data-dir", default=None)
    p.add_argument("--limit", type=positive_int, default=None)
    p.add_argument("--sample", type=positive_int, default=None)
    p.add_argument("--seed", type=int, default=0, help="seed of --sample and of the bootstrap")
    p.add_argument("--resamples", type=positive_int, default=2000, help="bootstrap resamples (default 2000)")
    p.add_argument("--batch-tokens", type=positive_int, default=None)
    p.add_argument("--cache-dir", default=None)
    p.add_argument("--no-cache", action="store_true")
    p.add_argument("--no-download", action="store_true")
    p.add_argument("--out", default=None, help="write comparison.csv and comparison.json here")
    add_progress_arg(p)
    p.set_defaults(func=cmd_compare)
    return p


def cmd_compare(args: argparse.Namespace) -> int:
    from biaslens.data.datasets import load_dataset
    from biaslens.engine.evaluation import evaluate
    from biaslens.data.export import atomic_write, safe_csv, text_table, to_json
    from biaslens.analyses.paired import bootstrap_method, paired_comparison
    from biaslens.engine.metrics import METRICS
    from biaslens.engine.stats import MCNEMAR_TEST

    models = args.model or []
    if len(models) != 2:
        raise InputError(f"compare needs exactly two models (--model A B), got {len(models)}.")
    run = RunOptions.from_args(args)
    spec = ModelSpec.from_args(args, model=models[0])
    progress = Progress.from_args(args)
    with progress.download(args.dataset) as bar:
        dataset = load_dataset(args.dataset, data_dir=args.data_dir, download=not args.no_download, progress=bar)
    for note in dataset.notes:
        print(f"note: {note}", file=sys.stderr)
    cache = result_cache(args)
    n = len(dataset)
    results = []
    for name in models:
        lm = load(spec.with_model(name))
        print(f"Scoring {dataset.name} with {name} ...", file=sys.stderr)
        with progress.bar(min(n, run.limit or n, run.sample or n), "pair", f"{dataset.name} {name}") as bar:
            results.append(evaluate(lm, dataset, run.metrics, cache=cache, progress=progress_to(bar), **run.evaluate_kwargs()))
    table = paired_comparison(results[0], results[1], list(run.metrics), n_resamples=args.resamples, seed=run.seed)
    first, second = models
    print(f"\n{dataset.name}, {int(table['n'].iloc[0]):,} pairs. A = {first}, B = {second}. Difference = B − A (percentage points).")
    rows = [
        [
            METRICS[row.metric].name if row.metric in METRICS else row.metric,
            fmt(row.score_first),
            fmt(row.score_second),
            fmt(row.difference),
            f"[{fmt(row.ci_low)}, {fmt(row.ci_high)}]",
            f"{row.mcnemar_b}/{row.mcnemar_c}",
            f"{row.p_value:.3g}",
        ]
        for row in table.itertuples(index=False)
    ]
    print(text_table(["metric", "A", "B", "B − A", "95% CI (paired bootstrap)", "McNemar b/c", "p"], rows))
    interval = bootstrap_method(args.resamples, run.seed)
    print(f"95% CI: {interval}.\nb: pairs only A calls stereotypical-preferred; c: only B. p: {MCNEMAR_TEST}.")
    if args.out:
        out = Path(args.out)
        table = table.assign(model_first=first, model_second=second, dataset=dataset.name)
        csv_path = atomic_write(out / "comparison.csv", safe_csv(table))
        manifests = [r.manifest for r in results]
        atomic_write(
            out / "comparison.json",
            to_json(
                {
                    "models": [first, second],
                    "dataset": dataset.name,
                    "resamples": args.resamples,
                    "seed": run.seed,
                    "interval": interval,
                    "test": MCNEMAR_TEST,
                    "comparison": table.to_dict(orient="records"),
                    "manifests": manifests,
                }
            ),
        )
        print(f"wrote {csv_path} and {out / 'comparison.json'}")
    return 0


__all__ = ["cmd_compare", "register"]
