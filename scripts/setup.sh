#!/usr/bin/env bash
# Creates .venv (if needed) and installs biaslens's pinned requirements into it.
# Usage: bash scripts/setup.sh [--dev]   (--dev adds the test tools)
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
    "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip
if [ "${1:-}" = "--dev" ]; then
    .venv/bin/python -m pip install --quiet -r requirements-dev.txt
else
    .venv/bin/python -m pip install --quiet -r requirements.txt
fi
