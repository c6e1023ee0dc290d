#!/usr/bin/env bash
# biaslens as a user installs it (CI runs this): the wheel built from this checkout, installed with its app into a
# fresh environment, then used from a folder outside the checkout: `biaslens --help`, an `evaluate` on a tiny saved
# model, `biaslens score`, `python -m biaslens` and `biaslens app` serving the app.
# Quick on a second run: pip's cache keeps the wheels, torch comes from the local wheel (pins: requirements.txt).
# Usage: bash scripts/install_check.sh
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
REPO=$PWD
work=$(mktemp -d)
app_pid=""
cleanup() {
    [ -n "$app_pid" ] && kill "$app_pid" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
"$PYTHON" -m pip wheel --quiet --no-deps --wheel-dir "$work/dist" "$REPO"
"$PYTHON" -m venv "$work/venv"
"$work/venv/bin/python" -m pip install --quiet --upgrade pip
wheel=$(ls "$work"/dist/biaslens-*.whl)
"$work/venv/bin/python" -m pip install --quiet -c "$REPO/requirements.txt" "$wheel[app]"
cd "$work"
export HF_HUB_OFFLINE=1 BIASLENS_CACHE_DIR="$work/cache"
unset PYTHONPATH
bin="$work/venv/bin"
"$bin/biaslens" --help >/dev/null
"$bin/python" -m biaslens models >/dev/null
# biaslens comes from the wheel, not from a checkout
"$bin/python" -c "import biaslens, sys; sys.exit(0 if '$work/venv' in biaslens.__file__ else 'biaslens imported from ' + biaslens.__file__)"
"$bin/python" -c "from biaslens.engine.testing import build_random_model; build_random_model('xlm-roberta', None, 'tiny')" 2>/dev/null
printf 'sent_more,sent_less,bias_type\nWomen cannot drive.,Men cannot drive.,gender\nThe poor are lazy.,The rich are lazy.,socioeconomic\n' >pairs.csv
"$bin/biaslens" evaluate --model tiny --dataset pairs.csv --metrics aul,cps --out out >/dev/null 2>&1 || "$bin/biaslens" evaluate --model tiny --dataset pairs.csv --metrics aul,cps --out out
test -s out/pairs.csv && test -s out/summary.json
printf 'Women cannot drive.\nMen cannot drive.\n' >texts.txt
"$bin/biaslens" score --model tiny --file texts.txt --out tokens.csv >/dev/null 2>&1 || "$bin/biaslens" score --model tiny --file texts.txt --out tokens.csv
test -s tokens.csv
port=$("$bin/python" -c "import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])")
BIASLENS_MODEL="$work/tiny" "$bin/biaslens" app --server.port "$port" --server.headless true >app.log 2>&1 &
app_pid=$!
for _ in $(seq 1 90); do
    if "$bin/python" -c "import urllib.request; urllib.request.urlopen('http://localhost:$port/_stcore/health', timeout=2)" 2>/dev/null; then
        echo "install check: the wheel installs; biaslens --help, evaluate, score and app work from $work"
        exit 0
    fi
    kill -0 "$app_pid" 2>/dev/null || break
    sleep 1
done
cat app.log >&2
echo "install check: biaslens app did not start" >&2
exit 1
