#!/usr/bin/env bash
# Builds .venv-peers: the peer projects biaslens is checked against (tests marked `peers`, tests/peers/), in an
# environment of their own so that nothing of theirs reaches biaslens's .venv. Pinned to the torch, transformers and
# tokenizers biaslens itself pins (requirements.txt), so both sides tokenize and compute alike:
#   torch==2.13.0 transformers==5.23.0 tokenizers==0.23.3 minicons==0.3.39 lm_eval==0.4.13
#   captum==0.9.0 transformer-lens==4.3.0 (the anatomy views: tests/peers/test_anatomy.py; pip keeps torch and
#   transformers at the pins above, checked by the last line)
# The one shim transformers 5 needs (minicons 0.3.39 calls tokenizer.batch_encode_plus, which transformers 5 removed)
# is applied by tests/peers/run_minicons.py when it runs, not installed here.
# Usage: bash scripts/peers.sh     (again: reuses the folder, reinstalls only what differs)
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
if [ ! -x .venv-peers/bin/python ]; then
    "$PYTHON" -m venv .venv-peers
fi
.venv-peers/bin/python -m pip install --quiet --upgrade pip
.venv-peers/bin/python -m pip install --quiet \
    torch==2.13.0 transformers==5.23.0 tokenizers==0.23.3 minicons==0.3.39 lm_eval==0.4.13 captum==0.9.0 transformer-lens==4.3.0
.venv-peers/bin/python -c "
import captum, minicons, lm_eval, torch, transformers, transformer_lens
assert torch.__version__.split('+')[0] == '2.13.0' and transformers.__version__ == '5.23.0', (torch.__version__, transformers.__version__)
print('peers ready:', 'torch', torch.__version__, 'transformers', transformers.__version__, 'captum', captum.__version__)"
