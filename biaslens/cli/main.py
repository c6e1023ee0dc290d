"""The parser, the dispatch and the exit codes of `biaslens <command>`.

Commands: evaluate (score a dataset, the contract scripts and the app rely on), compare
(two models, paired), report (the paper's tables and figure for one or more models),
shuffle (one sentence shuffled), inspect (one pair, token by token), metrics (the
registry), models (the presets), datasets (where the datasets are, or fetch them), lab
(train and evaluate a model with a planted bias), kurita (template scores and WEAT-style
tests). Bad arguments and bad input exit non-zero with one line on stderr, never a traceback.
"""

from __future__ import annotations

import argparse
import sys
from typing import Sequence

from ..errors import BiaslensError
from . import compare, datasets, evaluate, inspect, kurita, lab, metrics, models, report, shuffle

from .common import EXIT_ERROR, Parser

EXIT_INTERRUPTED = 130

#: The subcommands in the order `--help` lists them; each module has `register(subparsers)`.
COMMANDS = (evaluate, compare, inspect, metrics, models, datasets, lab, kurita, report, shuffle)


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="biaslens", description="Token-level social bias in masked language models.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    for command in COMMANDS:
        command.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        if isinstance(getattr(args, "out", None), str):  # refuse an unwritable output folder before any work
            from ..export import check_output_dir

            check_output_dir(args.out)
        return args.func(args)
    except BiaslensError as exc:
        print(f"biaslens {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print(
            f"biaslens {args.command}: interrupted. Finished chunks are cached: run the same command again to resume.",
            file=sys.stderr,
        )
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
