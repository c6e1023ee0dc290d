#!/usr/bin/env bash
# Sets up .venv and runs the tests. Extra arguments go to pytest, e.g. -k inspector
#   bash scripts/test.sh           the fast set: every test except those marked slow (training, multi-process
#                                  runs) or browser (the real app in headless Chromium)
#   bash scripts/test.sh --all     every test (what CI runs)
# Tests marked `shared` read the real datasets and tokenizers in ../shared (or the folder named by
# $BIASLENS_SHARED); without it they are skipped with a message, and everything else still runs.
# Browser tests need Debian's chromium (apt-get install chromium chromium-driver); without it they
# are skipped with a message.
set -euo pipefail
cd "$(dirname "$0")/.."
select=(-m "not slow and not browser")
if [ "${1:-}" = "--all" ]; then
    select=()
    shift
fi
bash scripts/setup.sh --dev
exec .venv/bin/python -m pytest "${select[@]}" "$@"
