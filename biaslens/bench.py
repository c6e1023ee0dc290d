"""`python -m biaslens.bench`: runs the benchmark suite of a source checkout.

The suite itself lives in `benchmarks/bench_engine.py` (not in the installed package: it
needs benchmark data and tokenizers, named with `--data-dir` and `--tokenizers`). This
entry point only finds it beside the package and runs it; an installed copy without the
checkout says so in one line and exits 2.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Sequence

PROG = "python -m biaslens.bench"
SUITE = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_engine.py"


def main(argv: Sequence[str] | None = None) -> int:
    """Run `benchmarks/bench_engine.py` with `argv`; its exit status (2 without a checkout)."""
    if not SUITE.is_file():
        message = "the benchmark suite is not installed with the package; run benchmarks/bench_engine.py from a source checkout."
        print(f"{PROG}: error: {message}", file=sys.stderr)
        return 2
    spec = importlib.util.spec_from_file_location("benchmarks.bench_engine", SUITE)
    assert spec is not None and spec.loader is not None
    suite = sys.modules.get(spec.name)
    if suite is None or getattr(suite, "__file__", None) != str(SUITE):
        suite = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = suite  # dataclasses look their module up by name
        spec.loader.exec_module(suite)
    return suite.cli(argv, prog=PROG)


if __name__ == "__main__":
    sys.exit(main())
