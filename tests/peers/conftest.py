"""The peer environment (.venv-peers, built by `bash scripts/peers.sh`) and a way to run peer code in it.

Tests marked `peers` compare biaslens with other projects' own code (minicons, ...), run in that environment through a
subprocess (never imported into biaslens's). Where .venv-peers is missing they are skipped with a message saying how to
build it; with BIASLENS_REQUIRE_PEERS=1 (CI) they fail instead.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.support import REPO

PEERS = Path(os.environ.get("BIASLENS_PEERS_VENV") or REPO / ".venv-peers")
PEERS_PYTHON = PEERS / "bin" / "python"
HERE = Path(__file__).resolve().parent


@pytest.fixture(scope="session")
def peers_python() -> Path:
    """The peer environment's Python; a skip (a failure with BIASLENS_REQUIRE_PEERS=1) where it is missing."""
    if not PEERS_PYTHON.is_file():
        why = f"needs the peer environment {PEERS} (build it with `bash scripts/peers.sh`)"
        if os.environ.get("BIASLENS_REQUIRE_PEERS") == "1":
            pytest.fail(f"BIASLENS_REQUIRE_PEERS=1 but {why}")
        pytest.skip(why)
    return PEERS_PYTHON


def run_peer(python: Path, script: str, request: dict[str, Any], timeout: float = 600) -> dict[str, Any]:
    """Run tests/peers/<script> in the peer environment with `request` as JSON on stdin; its JSON answer."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    env.update(HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    done = subprocess.run(
        [str(python), str(HERE / script)], input=json.dumps(request), capture_output=True, text=True, timeout=timeout, env=env, cwd=HERE
    )
    if done.returncode != 0:
        raise AssertionError(f"{script} failed in {python.parent.parent}:\n{done.stderr[-4000:]}")
    return json.loads(done.stdout)
