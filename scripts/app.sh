#!/usr/bin/env bash
# Sets up (first run only takes long) and starts the biaslens app on http://localhost:8501: `biaslens app` in .venv.
# Extra arguments go to Streamlit, e.g. bash scripts/app.sh --server.port 8502
#
# A run on your own machine: the app listens on this machine only (--server.address localhost) and opens your own model
# and data folders (BIASLENS_LOCAL=on; docs/app.md). Name another address (--server.address 0.0.0.0) for a shared
# server: then only the folders its operator lists in BIASLENS_MODEL_DIRS / BIASLENS_DATA_DIRS (docs/operators.md).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/biaslens app "$@"
