#!/usr/bin/env bash
# Creates .venv (if needed), installs biaslens's pinned requirements into it, then biaslens itself (editable, with the
# app's extra): the `biaslens` command and `python -m biaslens` work from any folder, and run this checkout's code.
# Usage: bash scripts/setup.sh [--dev]   (--dev adds the test tools)
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
    "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip
requirements=requirements.txt
[ "${1:-}" = "--dev" ] && requirements=requirements-dev.txt
.venv/bin/python -m pip install --quiet -r "$requirements"
# requirements.txt as constraints: every dependency stays at its pin (torch at exactly 2.13.0, the local CPU build).
.venv/bin/python -m pip install --quiet -c requirements.txt -e ".[app]"
