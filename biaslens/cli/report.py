"""`biaslens report`: reproduce Kaneko & Bollegala (2022), Tables 1-5 and Figure 1, for one or more models (`biaslens.report.reproduction`)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import pandas as pd

from biaslens.errors import InputError
from biaslens.engine.options import ModelSpec, RunOptions
from biaslens.data.export import check_output_dir
from biaslens.report.reproduction import ANALYSES, DEFAULT_DATASETS, ReportOptions, analyse_model, build_report, report_files
from biaslens.cli.common import (
    Progress,
    add_command,
    add_compat_arg,
    add_data_args,
    add_progress_arg,
    load,
    model_caveats,
    pair_texts,
    positive_int,
    seed_int,
)
from biaslens.cli.evaluate import result_cache


def register(sub: Any) -> argparse.ArgumentParser:
    return add_command(sub, "report", cmd_report, add_report_arguments, model="several")


def add_report_arguments(p: Any) -> Any:
    """Options of `biaslens report` besides the model ones (argparse); returns the parser."""
    from biaslens.engine.metrics import PAPER_METRICS

    p.add_argument("--out", required=True, help="output folder")
    p.add_argument("--datasets", default=",".join(DEFAULT_DATASETS), help="comma-separated: crows-pairs, stereoset or dataset paths (default both)")
    p.add_argument("--analyses", default=",".join(ANALYSES), help=f"comma-separated, from: {' '.join(ANALYSES)} (default all)")
    p.add_argument("--metrics", default=",".join(PAPER_METRICS), help=f"metrics of Table 5 and Figure 1 (default {','.join(PAPER_METRICS)})")
    add_compat_arg(p)
    p.add_argument("--limit", type=positive_int, default=None, help="only the first N pairs of each dataset")
    p.add_argument("--sample", type=positive_int, default=None, help="a seeded random sample of N pairs of each dataset")
    p.add_argument("--seed", type=seed_int, default=0, help="seed of --sample")
    p.add_argument("--shuffle-seed", type=seed_int, default=0, help="seed of the shuffle experiment (Table 4)")
    add_data_args(p)
    p.add_argument("--cache-dir", default=None, help="result cache folder (default $BIASLENS_CACHE_DIR or ~/.cache/biaslens)")
    p.add_argument("--no-cache", action="store_true", help="neither read nor write the result cache")
    add_progress_arg(p)
    return p


def cmd_report(args: Any) -> int:
    """Every chosen analysis for each --model; writes the tables, figures and report into --out."""
    from biaslens.data.datasets import PairDataset, load_dataset
    from biaslens.engine.evaluation import select_pairs
    from biaslens.analyses.explore import short_names
    from biaslens.engine.models import DEFAULT_MODEL

    run = RunOptions.from_args(args)
    options = ReportOptions.from_run(run, tuple(a.strip() for a in args.analyses.split(",") if a.strip()), args.shuffle_seed)
    check_output_dir(args.out, files=report_files(options))  # a folder where a result file goes: refused before any scoring
    progress = Progress.from_args(args)
    names = [d.strip() for d in args.datasets.split(",") if d.strip()]
    if not names:
        raise InputError("No dataset given: --datasets crows-pairs,stereoset (or dataset paths).")
    datasets: dict[str, PairDataset] = {}
    for name in names:
        with progress.download(name) as bar:
            dataset = load_dataset(name, data_dir=args.data_dir, download=not args.no_download, progress=bar)
        for note in dataset.notes:
            print(f"note: {name}: {note}", file=sys.stderr)
        key = dataset.name if dataset.name != "custom" else Path(name).stem  # a pairs file goes by its file's name, never its path
        if key in datasets and datasets[key].path != dataset.path:
            raise InputError(f"--datasets names two different datasets {key} ({datasets[key].path} and {dataset.path}): rename one file.")
        datasets[key] = dataset
    cache = result_cache(args)
    if cache is not None and cache.warning:
        print(f"warning: {cache.warning}", file=sys.stderr)
    models = list(dict.fromkeys(args.model or [DEFAULT_MODEL]))
    spec = ModelSpec.from_args(args, model=models[0])
    labels = short_names(models)
    texts = [t for d in datasets.values() for t in pair_texts(select_pairs(list(d.pairs), **run.selection())[:100])]
    analysed = []
    for model in models:
        lm = load(spec.with_model(model))
        # The report records the verdict and warns about it after the run (report.warnings()); the vocabulary is checked here.
        vocabulary = model_caveats(lm, texts, label=labels[model], warn_verdict=False).get("vocabulary")
        bars = progress.stages(labels[model])
        try:
            analysis = analyse_model(lm, datasets, options, label=labels[model], cache=cache, progress=bars)
        finally:
            bars.close()
        if vocabulary is not None:
            analysis.manifest["vocabulary"] = vocabulary
        analysed.append(analysis)
        del lm
    report = build_report(analysed, datasets, options)
    report.save(args.out)
    for m in analysed:
        if m.cached_pairs:
            print(f"{m.label}: {m.cached_pairs} pair records came from the result cache", file=sys.stderr)
    for w in report.warnings():
        print(f"warning: {w}", file=sys.stderr)
    for stem_notes in report.small_sample_notes().values():
        for note in stem_notes:
            print(f"note: small sample: {note}", file=sys.stderr)
    with pd.option_context("display.width", 200, "display.max_columns", 30, "display.max_colwidth", 60):
        for title, _text, shown, _stem in report.sections():
            caption, frame = shown[0]
            print(f"\n{title}\n{frame.to_string(index=False, float_format=lambda v: f'{v:.2f}')}")
    out = Path(args.out)
    print(f"\nwrote {out / 'report.html'}, {out / 'report.md'} and the tables as CSV in {out}")
    return 0


__all__ = ["add_report_arguments", "cmd_report", "register"]
