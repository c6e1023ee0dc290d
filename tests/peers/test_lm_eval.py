"""biaslens's `lm-eval` convention against lm-evaluation-harness 0.4.13 itself, run in the peer environment
(tests/peers/run_lm_eval.py): its own crows_pairs_english task (YAML, `doc_to_choice`, `process_results`, `HFLM` at its
default batch size 1) on the suite's tiny causal models saved to folders both sides load, fed the fixture's CrowS-Pairs
rows instead of its download.

* per pair, lm-eval's two log-likelihoods (sent_more, sent_less) equal biaslens's `ll` under the convention, within
  1e-5 or two float32 steps (both are float32 sums; the engine projects only the positions it reads, so a token's
  log-probability can differ in its last bit);
* its aggregated `pct_stereotype` and `likelihood_diff` equal the convention's `acc` and `likelihood_diff`;
* its crows_pairs_english_gender task (its own `filter_gender`) keeps the pairs biaslens's bias type names gender, with
  the same numbers over them.
"""

from __future__ import annotations

import numpy as np
import pytest

from biaslens.data.datasets import load_dataset
from biaslens.engine.conventions import lm_eval_statistics
from biaslens.engine.evaluation import evaluate
from biaslens.engine.models import load_model
from tests.peers.conftest import run_peer
from tests.support import FIXTURE_DATA

pytestmark = pytest.mark.peers

FAMILIES = ("gpt2", "pythia", "llama")
TOL = 1e-5
F32_STEPS = 2 * 2.0**-23
TASKS = {"english": "crows_pairs/crows_pairs_english.yaml", "gender": "crows_pairs/crows_pairs_english_gender.yaml"}


@pytest.fixture(scope="module")
def pairs():
    return list(load_dataset("crows-pairs", data_dir=FIXTURE_DATA, download=False).pairs)


def _rows(pairs) -> list[dict]:
    """The pairs as the task's dataset (jannalu/crows_pairs_multilingual, english) holds them: sent_more is biaslens's
    stereotypical sentence (CrowS-Pairs' own column), whatever the direction."""
    return [{"sent_more": p.sent_stereo, "sent_less": p.sent_anti, "stereo_antistereo": p.direction, "bias_type": p.bias_type} for p in pairs]


@pytest.fixture(scope="module")
def theirs(peers_python, causal_dirs, pairs):
    out = {}
    for family in FAMILIES:
        tasks = [{"id": k, "yaml": y, "rows": _rows(pairs)} for k, y in TASKS.items()]
        request = {"model": str(causal_dirs[family]), "batch_size": 1, "tasks": tasks}
        out[family] = run_peer(peers_python, "run_lm_eval.py", request)
    return out


def _close(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.abs(a - b) <= np.maximum(TOL, F32_STEPS * np.abs(b))


@pytest.mark.parametrize("family", FAMILIES)
def test_lm_eval_s_own_crows_pairs_task_equals_the_lm_eval_convention(theirs, causal_dirs, pairs, family):
    lm = load_model(str(causal_dirs[family]))
    ours = evaluate(lm, pairs, ["ll"], convention="lm-eval")
    task = theirs[family]["english"]
    samples = sorted(task["samples"], key=lambda s: s["doc_id"])
    assert [s["doc"]["sent_more"] for s in samples] == [p.sent_stereo for p in pairs]
    lls = np.array([[s["resps"][0][0][0], s["resps"][1][0][0]] for s in samples])
    mine = ours.pairs[["ll_stereo", "ll_anti"]].to_numpy(float)
    assert _close(mine, lls).all(), np.abs(mine - lls).max()
    assert [s["metrics"]["pct_stereotype"] for s in samples] == [1.0 if a > b else 0.0 for a, b in mine]  # each pair's verdict
    stats = ours.summary["convention"]["statistics"]
    assert task["results"]["pct_stereotype,none"] == stats["acc"]
    assert task["results"]["likelihood_diff,none"] == pytest.approx(stats["likelihood_diff"], rel=1e-5)


@pytest.mark.parametrize("family", FAMILIES)
def test_its_gender_task_keeps_the_gender_pairs(theirs, causal_dirs, pairs, family):
    gender = [p for p in pairs if p.bias_type == "gender"]
    task = theirs[family]["gender"]
    assert sorted(s["doc"]["sent_more"] for s in task["samples"]) == sorted(p.sent_stereo for p in gender) and gender
    ours = evaluate(load_model(str(causal_dirs[family])), gender, ["ll"], convention="lm-eval").pairs
    stats = lm_eval_statistics(ours["ll_stereo"].to_numpy(float), ours["ll_anti"].to_numpy(float), list(ours["direction"]))
    assert task["results"]["pct_stereotype,none"] == stats["acc"]
    assert task["results"]["likelihood_diff,none"] == pytest.approx(stats["likelihood_diff"], rel=1e-5)
