#!/usr/bin/env bash
# Sets up (first run only takes long) and starts the biaslens app on http://localhost:8501
# Extra arguments go to `streamlit run`, e.g. bash scripts/app.sh --server.port 8502
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/python -m streamlit run app.py "$@"
