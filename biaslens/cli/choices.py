"""`biaslens evaluate` on a multiple-choice dataset (BBQ, Winogender): `biaslens.choices.evaluation.evaluate_choices`.

`evaluate` hands a BBQ or Winogender name, subset, file or folder here (`is_choice_dataset`): the conventions of
`--convention` (default lm-eval; "all"), the items of `--limit` / `--sample`, the model, one call, and each convention's
statistics printed as the peer reports them. Options that only mean something for sentence pairs are refused in one line.
Writes items.csv, choices.csv, tokens.csv, breakdown.csv, flips.csv and summary.json.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

import pandas as pd

from biaslens.cli.common import Progress, fmt, load, model_caveats
from biaslens.errors import InputError

#: Options of `evaluate` that apply to sentence pairs only: (attribute, its flag, the value meaning "not given").
_PAIR_ONLY = (
    ("metrics", "--metrics", None),
    ("stereoset_scores", "--stereoset-scores", False),
    ("flags", "--flags", None),
    ("exclude_flagged", "--exclude-flagged", False),
    ("controls", "--controls", False),
    ("mlm_bias", "--mlm-bias", False),
    ("mlm_bias_batched", "--mlm-bias-batched", False),
    ("first_token", "--first-token", None),
)


def is_choice_dataset(name: str) -> bool:
    """Whether `--dataset` names a multiple-choice dataset (a name, a subset, a BBQ file or folder, a Winogender folder)."""
    from biaslens.data.multiple_choice import choice_dataset_name, is_choice_path

    return choice_dataset_name(name) is not None or (os.path.exists(os.path.expanduser(name)) and is_choice_path(name))


def _check_options(args: argparse.Namespace) -> None:
    given = [flag for attr, flag, unset in _PAIR_ONLY if getattr(args, attr, unset) not in (unset, "default")]
    if getattr(args, "compat", "default") != "default":
        given.append("--compat")
    if getattr(args, "precision", "model") != "model":
        given.append("--precision")
    if given:
        raise InputError(
            f"{', '.join(given)} {'applies' if len(given) == 1 else 'apply'} to sentence pairs; a multiple-choice dataset is read "
            "under --convention (lm-eval, lm-eval-norm, original or all): leave "
            f"{'it' if len(given) == 1 else 'them'} out."
        )


def _chosen(args: argparse.Namespace, family: str) -> list[Any]:
    from biaslens.choices.conventions import parse_choice_conventions

    return parse_choice_conventions(None if args.convention == "default" else args.convention, family)


def _subset(dataset: Any, args: argparse.Namespace) -> Any:
    """The items --limit (the first N) or --sample (N at random, seeded by --seed, in their order) keep."""
    import numpy as np

    n = len(dataset)
    if args.sample is not None and args.sample < n:
        kept = set(np.random.default_rng(args.seed).choice(n, size=args.sample, replace=False).tolist())
        dataset = dataset.select(lambda it: it.item_id in kept, dataset.name, f"{dataset.title}, a sample of {args.sample:,}")
    if args.limit is not None and args.limit < len(dataset):
        first = {it.item_id for it in dataset.items[: args.limit]}
        dataset = dataset.select(lambda it: it.item_id in first, dataset.name, f"{dataset.title}, the first {args.limit:,}")
    return dataset


def run(args: argparse.Namespace, cache: Any) -> int:
    """`biaslens evaluate` for a multiple-choice dataset (module docstring)."""
    from biaslens.choices.conventions import prompt_of
    from biaslens.choices.evaluation import evaluate_choices
    from biaslens.data.export import check_output_dir
    from biaslens.data.multiple_choice import load_choice_dataset
    from biaslens.engine.options import ModelSpec

    _check_options(args)
    check_output_dir(args.out)
    progress = Progress.from_args(args)
    with progress.download(args.dataset) as bar:
        dataset = load_choice_dataset(args.dataset, data_dir=args.data_dir, download=not args.no_download, progress=bar)
    chosen = _chosen(args, dataset.family)  # refused before the model loads
    dataset = _subset(dataset, args)
    for note in dataset.notes:
        print(f"note: {note}", file=sys.stderr)
    lm = load(ModelSpec.from_args(args))
    caveats = model_caveats(lm, [prompt_of(it) for it in dataset.items])
    with progress.pairs(len(dataset), f"scoring {dataset.title}") as bar:
        result = evaluate_choices(
            lm,
            dataset,
            [c.key for c in chosen],
            batch_tokens=args.batch_tokens,
            progress=bar,
            cache=cache,
            chunk_items=args.chunk_pairs,
            seed=args.seed,
        )
    result.summary["manifest"].update(caveats)
    written = result.save(args.out)
    print(statistics_text(result.summary))
    print(f"wrote {', '.join(p.name for p in written)} in {Path(args.out)}")
    return 0


def compare(args: argparse.Namespace, dataset: Any, models: list[str], spec: Any, cache: Any, progress: Progress) -> int:
    """`biaslens compare` on a multiple-choice dataset: every model scored under `--convention`, their statistics with
    intervals, each against the first (paired bootstrap differences, McNemar's exact test on the items answered right),
    the items whose answer differs (`biaslens.choices.compare`); comparison.csv, comparison.json and flips.csv in --out."""
    from biaslens.choices.compare import compare_runs
    from biaslens.choices.conventions import parse_choice_conventions
    from biaslens.choices.evaluation import evaluate_choices
    from biaslens.data.export import atomic_write, safe_csv, text_table, to_json

    if getattr(args, "mlm_bias", False) or getattr(args, "mlm_bias_batched", False):
        raise InputError("--mlm-bias applies to sentence pairs; a multiple-choice dataset is compared under --convention: leave it out.")
    (convention,) = parse_choice_conventions(args.choice_convention, dataset.family)
    dataset = _subset(dataset, args)
    runs = []
    for name in models:
        lm = load(spec.with_model(name))
        print(f"Scoring {dataset.title} with {name} ...", file=sys.stderr)
        with progress.pairs(len(dataset), f"{dataset.name} {name}") as bar:
            runs.append((name, evaluate_choices(lm, dataset, [convention.key], cache=cache, progress=bar, seed=args.seed)))
    found = compare_runs(runs, convention.key, resamples=args.resamples, seed=args.seed)
    print(f"\n{dataset.title}, {int(found.table['items'].iloc[0]):,} items, {convention.name} ({convention.key}).")
    measures = [c for c in found.table.columns if c not in ("model", "items") and not c.endswith(("_low", "_high"))]
    rows = [
        [r["model"], *(f"{fmt(r[m], 4)} [{fmt(r[m + '_low'], 4)}, {fmt(r[m + '_high'], 4)}]" for m in measures)] for _, r in found.table.iterrows()
    ]
    print(text_table(["model", *(f"{m} [95% CI]" for m in measures)], rows))
    print(f"\nEach model - {models[0]} (paired bootstrap 95% CI over the items; {found.test} on the items answered right):")
    rows = [
        [
            r["model"],
            *(f"{fmt(r[m + '_diff'], 4)} [{fmt(r[m + '_diff_low'], 4)}, {fmt(r[m + '_diff_high'], 4)}]" for m in measures),
            fmt(r["mcnemar_p"], 4),
        ]
        for _, r in found.paired.iterrows()
    ]
    print(text_table(["model", *(f"{m} difference" for m in measures), "McNemar p"], rows))
    print(f"{len(found.flips):,} answers differ from {models[0]}'s.")
    if args.out:
        from biaslens.data.export import check_output_dir

        folder = check_output_dir(args.out)
        both = pd.concat([found.table.assign(part="models"), found.paired.assign(part="paired")], ignore_index=True)
        written = [
            atomic_write(folder / "comparison.csv", safe_csv(both)),
            atomic_write(
                folder / "comparison.json",
                to_json(
                    {
                        "convention": convention.key,
                        "dataset": dataset.name,
                        "test": found.test,
                        "models": found.table.to_dict("records"),
                        "paired": found.paired.to_dict("records"),
                    }
                ),
            ),
            atomic_write(folder / "flips.csv", safe_csv(found.flips)),
        ]
        print(f"wrote {', '.join(p.name for p in written)} in {folder}")
    return 0


def statistics_text(summary: dict[str, Any]) -> str:
    """Each convention's statistics (summary.json's `conventions`) as text tables: BBQ's headline numbers and its bias scores
    by category, Winogender's seven accuracies; then the items whose answer flips between conventions."""
    from biaslens.data.export import text_table

    blocks = []
    family = summary["dataset"]["family"]
    for key, block in summary["conventions"].items():
        stats = block["statistics"]
        head = f"{block['name']} ({key}, {block['answer']}): {block['items']:,} items"
        if block["not_put"]:
            head += f" ({block['not_put']:,} it cannot put: no answer is one of lm-eval's unknown phrasings)"
        if family == "bbq":
            main = [[name, fmt(stats.get(name), 4)] for name in ("acc", "accuracy_amb", "accuracy_disamb", "amb_bias_score", "disamb_bias_score")]
            categories = [name.removeprefix("amb_bias_score_") for name in stats if name.startswith("amb_bias_score_")]
            rows = [
                [c, fmt(stats[f"amb_bias_score_{c}"], 4), fmt(stats[f"disamb_bias_score_{c}"], 4)]
                for c in categories
                if stats[f"amb_bias_score_{c}"] is not None or stats[f"disamb_bias_score_{c}"] is not None
            ]
            text = text_table(["statistic", "value"], main) + "\n" + text_table(["category", "amb_bias_score", "disamb_bias_score"], rows)
        else:
            text = text_table(["statistic", "value"], [[name, fmt(value, 4)] for name, value in stats.items()])
        blocks.append(head + "\n" + text)
    flips = summary.get("flips") or {}
    if flips:
        blocks.append("items whose answer flips: " + "; ".join(f"{pair} {n:,}" for pair, n in flips.items()) + " (flips.csv)")
    return "\n\n".join(blocks)


__all__ = ["compare", "is_choice_dataset", "run", "statistics_text"]
