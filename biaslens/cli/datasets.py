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
    return 0


__all__ = ["cmd_datasets", "register"]
