"""Command line: `python -m biaslens <command> ...` (also installed as `biaslens`).

`main` parses and dispatches (`main.py`); `common.py` holds what the commands share
(argument groups, progress, loading, the model's caveats); each subcommand has its own
module with `register(subparsers)` and its `cmd_*` function. The engine never imports
this package.
"""

from biaslens.cli.main import EXIT_ERROR, EXIT_INTERRUPTED, build_parser, main

__all__ = ["EXIT_ERROR", "EXIT_INTERRUPTED", "build_parser", "main"]
