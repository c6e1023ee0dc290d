"""The parser, the dispatch and the exit codes of `biaslens <command>`.

Commands: evaluate (score a dataset, the contract scripts and the app rely on), compare
(two models, paired), report (the paper's tables and figure for one or more models),
shuffle (one sentence shuffled), inspect (one pair, token by token), metrics (the
registry), models (the presets), datasets (where the datasets are, or fetch them), lab
(train and evaluate a model with a planted bias), kurita (template scores and WEAT-style
tests), app (the web app). Bad arguments and bad input exit non-zero with one line on stderr, never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import Iterable, Sequence

from biaslens.errors import BiaslensError, InputError
from biaslens.cli.common import COMMANDS, EXIT_ERROR, Parser

EXIT_INTERRUPTED = 130
#: Folder options (argparse's names) whose empty value is refused: it meant the default folder, or the current one.
FOLDER_OPTIONS = ("models_dir", "cache_dir", "data_dir")


def build_parser(commands: Iterable[str] | None = None) -> argparse.ArgumentParser:
    """The parser with the options of `commands` (default: every command); the others are listed by name and help only.

    A command's module (`biaslens.cli.<command>`, with `register(subparsers)`) is imported only when its
    options are added, so what it needs (torch, pandas) loads only for the command that runs: `biaslens
    metrics`, `models` and `--help` answer without loading torch.
    """
    wanted = set(COMMANDS) if commands is None else set(commands)
    parser = Parser(prog="biaslens", description="Token-level social bias in masked and causal language models.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    for name, summary in COMMANDS.items():
        if name in wanted:
            importlib.import_module(f"{__package__}.{name}").register(sub)
        else:
            sub.add_parser(name, help=summary)
    return parser


def _command(argv: Sequence[str]) -> list[str]:
    """The command `argv` names (its first word), or none (`--help`, nothing, or an unknown word that argparse refuses)."""
    return [argv[0]] if argv and argv[0] in COMMANDS else []


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(_command(argv))
    args, extra = parser.parse_known_args(argv)
    if extra and not getattr(args, "passes_through", False):  # (`biaslens app` hands Streamlit's options on)
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    args.extra = extra
    try:
        if isinstance(getattr(args, "out", None), str):  # refuse an unwritable output folder before any work
            from biaslens.data.export import check_output_dir

            check_output_dir(args.out)
        for option in FOLDER_OPTIONS:  # an empty folder meant the default one (the cache) or the current one (data): refused
            if isinstance(value := getattr(args, option, None), str) and not value.strip():
                raise InputError(f"--{option.replace('_', '-')} is empty: name a folder, or leave the option out for the default.")
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
