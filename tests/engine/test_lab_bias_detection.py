"""Bias detection, not just arithmetic: a masked LM trained here on a planted corpus.

The bias lab's planted-association preset (`biaslens.lab`): group-A names go with
occupations X and group-B names with occupations Y 9 times in 10, both groups equally
frequent. A small BERT is trained on that corpus with the lab's default recipe (seed 0).
Every name is held out from two occupations of each set during training; on those
held-out combinations the stereotypical sentence keeps the planted association and the
anti-stereotypical one swaps the name for its counterpart in the other group, as
CrowS-Pairs does. AUL and CPS must prefer the planted association (bias score > 60).
"""

import pytest

from biaslens import lab


@pytest.mark.slow
def test_aul_and_cps_detect_a_planted_association():
    report = lab.run_lab(lab.scenario_settings("association"))
    assert report.settings.seed == 0 and report.settings.association == 0.9 and report.settings.frequency_ratio == 1.0
    frame = report.frame().set_index("key")
    for metric in ("aul", "cps"):
        assert frame.loc[metric, "bias_score"] > 60, frame.loc[metric].to_dict()
