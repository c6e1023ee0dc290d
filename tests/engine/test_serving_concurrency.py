"""Many users on one cached model: every result equals the single-user result."""

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pandas as pd

from biaslens.data.datasets import Pair
from biaslens.engine.evaluation import evaluate, inspect_pair

PAIRS = [(f"Person {i} said the women were bad at maths.", f"Person {i} said the men were bad at maths.") for i in range(16)]


def _scores(lm, pair):
    result = inspect_pair(lm, *pair, metrics="aul,aula,cps,sss,all_masked")
    return result.summary_frame()[["stereo", "anti"]].to_numpy(), result.stereo.token_frame()["attention"].to_numpy()


def test_eight_sessions_and_a_dataset_run_at_once_match_single_user_results(tiny_models):
    lm = tiny_models["roberta"]
    expected = [_scores(lm, p) for p in PAIRS]
    dataset = [Pair(i, "custom", "x", "stereo", a, b) for i, (a, b) in enumerate(PAIRS)]
    expected_run = evaluate(lm, dataset, ["aul", "cps"]).pairs

    with ThreadPoolExecutor(max_workers=9) as pool:
        run = pool.submit(evaluate, lm, dataset, ["aul", "cps"], chunk_pairs=4)
        futures = [pool.submit(_scores, lm, p) for p in PAIRS * 2]
        got = [f.result() for f in futures]
        got_run = run.result().pairs

    for (scores, attention), (want_scores, want_attention) in zip(got, expected * 2):
        np.testing.assert_allclose(scores, want_scores, atol=1e-5)
        np.testing.assert_allclose(attention, want_attention, atol=1e-6)
    pd.testing.assert_frame_equal(got_run, expected_run, atol=1e-5)
