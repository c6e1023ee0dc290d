"""Kept for old links: the benchmark suite is `python -m biaslens.bench` (see its --help).

    python benchmarks/bench_engine.py [options]  ==  python -m biaslens.bench [options]
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from biaslens.bench import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
