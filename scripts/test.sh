#!/usr/bin/env bash
# Sets up and runs the whole test suite. Extra arguments go to pytest, e.g. -k inspector
# Browser tests need Debian's chromium (apt-get install chromium chromium-driver);
# without it they are skipped with a message.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --dev
exec .venv/bin/python -m pytest "$@"
