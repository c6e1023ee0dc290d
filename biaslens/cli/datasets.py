"""`biaslens datasets`: where the datasets are; --fetch downloads the missing ones."""

from __future__ import annotations

import argparse
from typing import Any

from biaslens.cli.common import COMMANDS, Progress, add_progress_arg


def register(sub: Any) -> argparse.ArgumentParser:
    ds = sub.add_parser("datasets", help=COMMANDS["datasets"])
    ds.add_argument("--data-dir", default=None)
    ds.add_argument("--fetch", action="store_true", help="download missing datasets into the cache")
    add_progress_arg(ds)
    ds.set_defaults(func=cmd_datasets)
    return ds


def cmd_datasets(args: argparse.Namespace) -> int:
    from biaslens.data.datasets import DATASETS, load_dataset, locate_dataset

    progress = Progress.from_args(args)
    for name, source in DATASETS.items():
        path = locate_dataset(name, data_dir=args.data_dir)
        if path is None and args.fetch:
            with progress.download(name) as bar:
                path = load_dataset(name, data_dir=args.data_dir, progress=bar).path
        print(f"{name:<24}{path if path else 'not found locally (run with --fetch, or pass --data-dir)'}")
        print(f"{'':<24}source: {source.url} ({source.license})")
    _choice_datasets(args, progress)
    return 0


def _choice_datasets(args: argparse.Namespace, progress: Progress) -> None:
    """The multiple-choice datasets: how many of their files are here (all downloaded with --fetch), their subsets."""
    from biaslens.data.multiple_choice import CHOICE_DATASETS, CHOICE_SUBSETS, load_choice_dataset, locate_choice_file

    for name, source in CHOICE_DATASETS.items():
        found = [locate_choice_file(source, f, data_dir=args.data_dir) for f in source.files]
        if args.fetch and not all(found):
            with progress.download(name) as bar:
                load_choice_dataset(name, data_dir=args.data_dir, progress=bar)
            found = [locate_choice_file(source, f, data_dir=args.data_dir) for f in source.files]
        have = [p for p in found if p is not None]
        where = f"{len(have)} of {len(found)} files in {have[0].parent}" if have else "not found locally (run with --fetch, or pass --data-dir)"
        print(f"{name:<24}{where}")
        print(f"{'':<24}source: {source.url} ({source.license}); multiple choice (biaslens evaluate --convention lm-eval)")
        subsets = [key for key, (base, _keep, _title) in CHOICE_SUBSETS.items() if base == name]
        print(f"{'':<24}subsets: {', '.join(subsets)}")


__all__ = ["cmd_datasets", "register"]
