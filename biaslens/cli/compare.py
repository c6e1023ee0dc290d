"""`biaslens compare`: two or more models on the same pairs; bias-score differences against the first (paired bootstrap),
McNemar's exact test on verdicts, rank stability under resampling (`biaslens.analyses.stability`) and, with
`--mlm-bias`, mlm-bias's relative bias (`biaslens.analyses.mlm_bias`)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from biaslens.errors import InputError
from biaslens.engine.options import ModelSpec, RunOptions
from biaslens.cli.common import (
    Progress,
    add_command,
    add_compat_arg,
    add_progress_arg,
    add_run_args,
    fmt,
    load,
    bounded_int,
    positive_int,
    progress_to,
    seed_int,
)
from biaslens.engine.stats import MAX_RESAMPLES
from biaslens.cli.evaluate import result_cache

if TYPE_CHECKING:
    from biaslens.analyses.stability import RankStability

#: argparse type of --resamples: 1 to `MAX_RESAMPLES` (a billion resamples took 22 GB before it was refused).
resamples_int = bounded_int(1, MAX_RESAMPLES, "a number of resamples")


def register(sub: Any) -> argparse.ArgumentParser:
    return add_command(sub, "compare", cmd_compare, add_compare_arguments, model="several")


def add_compare_arguments(p: argparse.ArgumentParser) -> None:
    from biaslens.engine.metrics import PAPER_METRICS

    p.add_argument("--dataset", required=True, help="a named dataset or a pairs file; multiple choice: bbq, winogender, their subsets and files")
    p.add_argument(
        "--convention",
        dest="choice_convention",
        default="lm-eval",
        choices=["lm-eval", "lm-eval-norm", "original"],
        help="a multiple-choice dataset's reading (BBQ, Winogender: biaslens evaluate --help); pairs ignore it",
    )
    p.add_argument("--metrics", default=",".join(PAPER_METRICS))
    add_compat_arg(p)
    p.add_argument("--data-dir", default=None)
    p.add_argument("--limit", type=positive_int, default=None)
    p.add_argument("--sample", type=positive_int, default=None)
    p.add_argument("--seed", type=seed_int, default=0, help="seed of --sample and of the bootstrap")
    p.add_argument("--resamples", type=resamples_int, default=2000, help=f"bootstrap resamples (default 2000, at most {MAX_RESAMPLES:,})")
    add_run_args(p)
    p.add_argument("--no-download", action="store_true")
    p.add_argument(
        "--stability",
        default="pairs",
        choices=["pairs", "types", "off"],
        help="rank stability (Selvam et al. 2023): resample the pairs (default), the bias types and then their pairs, or off",
    )
    p.add_argument(
        "--mlm-bias",
        action="store_true",
        help="also mlm-bias's CRR, CRRA, ΔP and ΔPA for each model and its relative bias of each model against the first",
    )
    p.add_argument("--mlm-bias-batched", action="store_true", help="--mlm-bias as the package's default batching=True path")
    p.add_argument("--out", default=None, help="write comparison.csv and comparison.json here (stability.csv, mlm_bias_relative.csv with them)")
    add_progress_arg(p)


def cmd_compare(args: argparse.Namespace) -> int:
    from biaslens.data.datasets import load_dataset
    from biaslens.engine.evaluation import evaluate
    from biaslens.data.export import atomic_write, safe_csv, text_table, to_json
    from biaslens.analyses.paired import bootstrap_method, paired_comparison
    from biaslens.engine.metrics import METRICS
    from biaslens.engine.stats import MCNEMAR_TEST
    from biaslens.analyses.stability import rank_stability_of
    import pandas as pd

    from biaslens.engine.identity import model_identity
    from biaslens.engine.models import check_model_source, resolve_device
    from biaslens.data.export import check_output_dir

    if args.out:  # (a folder where a file of the results goes: refused after every model was scored)
        check_output_dir(args.out, files=("comparison.csv", "comparison.json", "stability.csv", "mlm_bias_relative.csv"))

    models = args.model or []
    if len(models) < 2:
        raise InputError(f"compare needs at least two models (--model A B ...), got {len(models)}.")
    run = RunOptions.from_args(args)
    spec = ModelSpec.from_args(args, model=models[0])
    resolve_device(spec.device)
    for name in models:  # every model checked (name, folder, config) before the first is loaded and scored
        check_model_source(name, allow_pickle=spec.allow_pickle)
    seen: dict[Any, str] = {}
    for name in models:
        identity = model_identity(name, spec.revision)
        if identity in seen:
            raise InputError(f"{seen[identity]} and {name} are the same model: compare different ones.")
        seen[identity] = name
    progress = Progress.from_args(args)
    with progress.download(args.dataset) as bar:
        dataset = load_dataset(args.dataset, data_dir=args.data_dir, download=not args.no_download, progress=bar)
    for note in dataset.notes:
        print(f"note: {note}", file=sys.stderr)
    if dataset.kind == "choices":  # BBQ, Winogender: the models' answers compared item by item (cli/choices.py)
        from biaslens.cli import choices

        return choices.compare(args, dataset, models, spec, result_cache(args), progress)
    cache = result_cache(args)
    n = len(dataset)
    results = []
    for name in models:
        lm = load(spec.with_model(name))
        print(f"Scoring {dataset.name} with {name} ...", file=sys.stderr)
        with progress.bar(min(n, run.limit or n, run.sample or n), "pair", f"{dataset.name} {name}") as bar:
            results.append(evaluate(lm, dataset, run.metrics, cache=cache, progress=progress_to(bar), **run.evaluate_kwargs()))
    first = models[0]
    tables = []
    for name, result in zip(models[1:], results[1:]):
        tables.append(
            paired_comparison(results[0], result, list(run.metrics), n_resamples=args.resamples, seed=run.seed).assign(
                model_first=first, model_second=name, dataset=dataset.name
            )
        )
    table = pd.concat(tables, ignore_index=True)
    others = "B = " + models[1] if len(models) == 2 else "B = each other model in turn"
    print(f"\n{dataset.name}, {int(table['n'].iloc[0]):,} pairs. A = {first}, {others}. Difference = B − A (percentage points).")
    for name, part in table.groupby("model_second", sort=False):
        if len(models) > 2:
            print(f"B = {name}")
        rows = [
            [
                METRICS[row["metric"]].name if row["metric"] in METRICS else row["metric"],
                fmt(row["score_first"]),
                fmt(row["score_second"]),
                fmt(row["difference"]),
                f"[{fmt(row['ci_low'])}, {fmt(row['ci_high'])}]",
                f"{row['mcnemar_b']}/{row['mcnemar_c']}",
                f"{row['p_value']:.3g}",
            ]
            for row in pd.DataFrame(part).to_dict(orient="records")
        ]
        print(text_table(["metric", "A", "B", "B − A", "95% CI (paired bootstrap)", "McNemar b/c", "p"], rows))
    interval = bootstrap_method(args.resamples, run.seed)
    print(f"95% CI: {interval}.\nb: pairs only A calls stereotypical-preferred; c: only B. p: {MCNEMAR_TEST}.")
    named = dict(zip(models, results))
    stabilities = {}
    if args.stability != "off":
        for metric in run.metrics:
            stabilities[metric] = rank_stability_of(named, metric, scheme=args.stability, n_resamples=args.resamples, seed=run.seed)
        print(stability_text(stabilities, models))
    mlm = None
    if args.mlm_bias or args.mlm_bias_batched:
        mlm = _mlm_bias(args, spec, models, dataset, run, cache)
    if args.out:
        out = Path(args.out)
        csv_path = atomic_write(out / "comparison.csv", safe_csv(table))
        manifests = [r.manifest for r in results]
        written = [csv_path, out / "comparison.json"]
        document = {
            "models": list(models),
            "dataset": dataset.name,
            "resamples": args.resamples,
            "seed": run.seed,
            "interval": interval,
            "test": MCNEMAR_TEST,
            "comparison": table.to_dict(orient="records"),
            "manifests": manifests,
        }
        if stabilities:
            document["stability"] = {m: s.to_dict() for m, s in stabilities.items()}
            frames = [s.scores.assign(metric=m) for m, s in stabilities.items()]
            written.append(atomic_write(out / "stability.csv", safe_csv(pd.concat(frames, ignore_index=True))))
        if mlm is not None:
            document["mlm_bias"] = mlm["json"]
            written.append(atomic_write(out / "mlm_bias_relative.csv", safe_csv(mlm["relative"])))
        atomic_write(out / "comparison.json", to_json(document))
        print("wrote " + ", ".join(str(p) for p in written))
    return 0


def stability_text(stabilities: dict[str, RankStability], models: list[str]) -> str:
    """Each metric's rank stability as text: every model's score, rank and their intervals; then P(B above A)."""
    from biaslens.engine.metrics import METRICS
    from biaslens.analyses.stability import format_rank

    some = next(iter(stabilities.values()))
    width = max(12, *(len(m) for m in models)) + 2
    lines = [f"\nRank stability (Selvam et al. 2023): {some.method}."]
    lines.append(f"{'metric':<14}{'model':<{width}}{'score':>8}   {'95% CI':<17}{'rank (95%)':<14}{'P(first)':>9}")
    for metric, s in stabilities.items():
        for r in s.scores.to_dict(orient="records"):
            ci = f"[{fmt(r['ci_low'])}, {fmt(r['ci_high'])}]"
            lines.append(
                f"{METRICS[metric].name:<14}{r['model']:<{width}}{fmt(r['bias_score']):>8}   {ci:<17}{format_rank(r):<14}{r['p_first']:>9.2f}"
            )
    lines.append("P(row scores above column), ties counting half:")
    for metric, s in stabilities.items():
        if len(models) == 2:
            lines.append(f"{METRICS[metric].name:<14}P(B scores above A) = {s.probability(models[1], models[0]):.3f}")
            continue
        lines.append(f"{METRICS[metric].name}")
        lines.append(" " * width + "".join(f"{i + 1:>8}" for i in range(len(models))))
        for i, a in enumerate(models):
            cells = "".join(f"{'—':>8}" if a == b else f"{s.probability(a, b):>8.3f}" for b in models)
            lines.append(f"{str(i + 1) + ' ' + a:<{width}}{cells}")
    return "\n".join(lines)


def _mlm_bias(args: argparse.Namespace, spec: ModelSpec, models: list[str], dataset: Any, run: RunOptions, cache: Any) -> dict[str, Any]:
    """mlm-bias's measures for each model, and its relative bias of each other model against the first (both formulas)."""
    from biaslens.analyses.mlm_bias import MEASURE_NAMES, mlm_bias_scores, relative_bias
    import pandas as pd

    found = {}
    for name in models:
        lm = load(spec.with_model(name))
        print(f"mlm-bias measures of {name} ...", file=sys.stderr)
        found[name] = mlm_bias_scores(lm, dataset, padded=args.mlm_bias_batched, cache=cache, **run.selection())
    print(f"\nmlm-bias measures (Zalkikar & Chandra; {found[models[0]].summary()['path']}): bias score per model")
    print(f"{'measure':<10}" + "".join(f"{m[-24:]:>26}" for m in models))
    for measure, name in MEASURE_NAMES.items():
        cells = []
        for m in models:
            r = found[m].scores.set_index("measure").loc[measure]
            cells.append(f"{fmt(r['bias_score'])} [{fmt(r['ci_low'])}, {fmt(r['ci_high'])}]")
        print(f"{name:<10}" + "".join(f"{c:>26}" for c in cells))
    frames = []
    for other in models[1:]:
        frames.append(relative_bias(found[models[0]], found[other]).assign(model_1=models[0], model_2=other))
    relative = pd.concat(frames, ignore_index=True)
    overall = relative[relative["bias_type"] == ""]
    print("Relative bias of model 2 against model 1 (the first): % of pairs with (M2(S1) − M1(S1)) − (M2(S2) − M2(S1)) > 0 (published)")
    print("and with (M2(S1) − M1(S1)) − (M2(S2) − M1(S2)) > 0 (symmetric, biaslens's reading)")
    print(f"{'model 2':<28}{'measure':<10}{'published':>11}{'symmetric':>11}")
    values = {(r["model_2"], r["measure"], r["formula"]): r["relative_bias"] for r in pd.DataFrame(overall).to_dict(orient="records")}
    for other in models[1:]:
        for measure, label in MEASURE_NAMES.items():
            published, symmetric = values[other, measure, "published"], values[other, measure, "symmetric"]
            print(f"{other[-26:]:<28}{label:<10}{fmt(published):>11}{fmt(symmetric):>11}")
    return {
        "relative": relative,
        "json": {"models": {m: f.summary() for m, f in found.items()}, "relative": relative.to_dict(orient="records")},
    }


__all__ = ["cmd_compare", "register", "stability_text"]
