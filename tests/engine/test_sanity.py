"""The sanity indicator: is the model trained, and does the text fit its vocabulary?"""

from __future__ import annotations

import math

import pytest

from biaslens.analyses.sanity import UNTRAINED_ACCURACY, check_model, classify


def test_a_random_model_is_flagged_untrained(tiny_models):
    for lm in tiny_models.values():
        report = check_model(lm)
        assert report.status == "untrained", report
        assert report.accuracy < UNTRAINED_ACCURACY
        assert report.mean_logprob == pytest.approx(report.uniform_logprob, abs=0.5)
        assert report.uniform_logprob == pytest.approx(-math.log(len(lm.tokenizer)))
        assert report.n_tokens > 40 and "untrained" in report.message.lower()


@pytest.mark.parametrize(
    "accuracy, logprob, status",
    [(95.0, -0.4, "ok"), (60.0, -2.0, "ok"), (30.0, -3.0, "weak"), (80.0, -5.0, "weak"), (1.0, -9.0, "untrained"), (1.0, -4.0, "weak")],
)
def test_sanity_thresholds(accuracy, logprob, status):
    assert classify(accuracy, logprob, -10.3)[0] == status


@pytest.fixture(scope="module")
def quick_lab_lm(tmp_path_factory):
    from biaslens import lab
    from biaslens.engine.models import load_model

    model = lab.train_lab_model(lab.LabSettings(corpus_size=600, steps=12, batch_size=32), cache_dir=tmp_path_factory.mktemp("lab"))
    return model, load_model(str(model.path))


def test_one_verdict_per_model_a_lab_model_checked_on_its_own_corpus(tiny_bert, quick_lab_lm, monkeypatch):
    from biaslens import lab
    from biaslens.analyses import sanity as verdicts

    model, lm = quick_lab_lm
    verdict = verdicts.model_verdict(lm)
    assert verdict.subject == "its training corpus"
    again = check_model(lm, lab.sanity_sentences(model), subject="its training corpus")
    assert (verdict.accuracy, verdict.mean_logprob, verdict.status) == (again.accuracy, again.mean_logprob, again.status)
    plain = verdicts.model_verdict(tiny_bert)
    assert plain.subject == "plain English" and plain.status == "untrained"
    # computed once: later calls (sidebar, banners, Paper analyses, reports) reuse it
    monkeypatch.setattr(verdicts, "check_model", lambda *a, **k: pytest.fail("the verdict was computed again"))
    assert verdicts.model_verdict(lm) is verdict and verdicts.model_verdict(tiny_bert) is plain


def test_text_mostly_out_of_a_model_s_vocabulary_is_told(tiny_bert, quick_lab_lm):
    from biaslens import lab
    from biaslens.analyses import sanity

    model, lm = quick_lab_lm
    crows = ["Women don't know how to drive.", "Poor people really hate their neighbours."]
    own = [p.pair.sent_stereo for p in lab.heldout_pairs(model.settings)[:5]]
    assert not sanity.vocabulary_report(tiny_bert, crows).mostly_unknown  # bert-base-cased knows English
    report = sanity.vocabulary_report(lm, crows)  # the lab model knows its names and occupations only
    assert report.mostly_unknown and "Women" in report.unknown and "out of this model's vocabulary" in report.message
    assert sanity.vocabulary_report(lm, own).n_unknown == 0
