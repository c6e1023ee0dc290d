"""`biaslens compare`: two models on the same pairs; bias-score differences (paired bootstrap) and McNemar's exact test on verdicts."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from biaslens.errors import InputError
from biaslens.engine.options import ModelSpec, RunOptions
from biaslens.cli.common import (
    COMMANDS,
    Progress,
    add_compat_arg,
    add_model_args,
    add_progress_arg,
    fmt,
    load,
    bounded_int,
    positive_int,
    progress_to,
    seed_int,
)
from biaslens.engine.stats import MAX_RESAMPLES
from biaslens.cli.evaluate import result_cache

#: argparse type of --resamples: 1 to `MAX_RESAMPLES` (a billion resamples took 22 GB before it was refused).
resamples_int = bounded_int(1, MAX_RESAMPLES, "a number of resamples")


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
    p.add_argument("--seed", type=seed_int, default=0, help="seed of --sample and of the bootstrap")
    p.add_argument("--resamples", type=resamples_int, default=2000, help=f"bootstrap resamples (default 2000, at most {MAX_RESAMPLES:,})")
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
    from biaslens.data.export import atomic_write, safe_csv, to_json
    from biaslens.analyses.paired import bootstrap_method, paired_comparison
    from biaslens.engine.stats import MCNEMAR_TEST

    from biaslens.engine.identity import model_identity
    from biaslens.engine.models import check_model_source, resolve_device

    models = args.model or []
    if len(models) != 2:
        raise InputError(f"compare needs exactly two models (--model A B), got {len(models)}.")
    run = RunOptions.from_args(args)
    spec = ModelSpec.from_args(args, model=models[0])
    resolve_device(spec.device)
    for name in models:  # every model checked (name, folder, config) before the first is loaded and scored
        check_model_source(name, allow_pickle=spec.allow_pickle)
    if model_identity(models[0], spec.revision) == model_identity(models[1], spec.revision):
        raise InputError(f"{models[0]} and {models[1]} are the same model: compare two different ones.")
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
    print(f"{'metric':<14}{'A':>8}{'B':>8}{'B − A':>9}   {'95% CI (paired bootstrap)':<27}{'McNemar b/c':>13}{'p':>10}")
    for row in table.itertuples(index=False):
        print(
            f"{row.metric:<14}{fmt(row.score_first):>8}{fmt(row.score_second):>8}{fmt(row.difference):>9}   "
            f"{'[' + fmt(row.ci_low) + ', ' + fmt(row.ci_high) + ']':<27}{f'{row.mcnemar_b}/{row.mcnemar_c}':>13}"
            f"{row.p_value:>10.3g}"
        )
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
