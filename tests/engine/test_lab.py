"""The bias lab: planted corpus, held-out pairs, training, cache, evaluation, CLI.

Models here are trained for a few steps on a small corpus (a second or two each); the
tests that need a model that actually learned (the default recipe, ~20 s) are marked slow.
"""

import json
import re
from collections import Counter
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
from safetensors.torch import load_file

from biaslens import lab
from biaslens.engine.metrics import MASKED_METRICS
from biaslens.cli import main
from biaslens.errors import InputError, ModelLoadError
from biaslens.engine.evaluation import inspect_pair
from biaslens.engine.models import load_model

#: A few training steps on a small corpus: enough to exercise every code path.
QUICK = lab.LabSettings(corpus_size=600, steps=12, batch_size=32)


def _parse(settings, sentence):
    """(group word, attribute) of a generated sentence."""
    names = [w for w in (*settings.group_a, *settings.group_b) if re.search(rf"\b{w}\b", sentence)]
    attributes = [w for w in (*settings.attributes_x, *settings.attributes_y) if re.search(rf"\b{w}\b", sentence)]
    assert len(names) == 1 and len(attributes) == 1, sentence
    return names[0], attributes[0]


@pytest.fixture(scope="module")
def quick_model(tmp_path_factory):
    return lab.train_lab_model(QUICK, cache_dir=tmp_path_factory.mktemp("lab"))


# ---------------------------------------------------------------------------------------
# Corpus and held-out pairs
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("association, ratio", [(0.9, 1.0), (0.5, 4.0), (0.75, 3.0), (1.0, 1.0), (0.2, 2.0)])
def test_corpus_has_exactly_the_planted_statistics(association, ratio):
    s = lab.LabSettings(association=association, frequency_ratio=ratio, corpus_size=3000)
    pairs = [_parse(s, x.text) for x in lab.generate_corpus(s)]
    assert len(pairs) == 3000
    in_a = [n in s.group_a for n, _ in pairs]
    assert sum(in_a) == round(3000 * ratio / (ratio + 1))
    a_with_x = [a in s.attributes_x for (n, a), is_a in zip(pairs, in_a) if is_a]
    b_with_y = [a in s.attributes_y for (n, a), is_a in zip(pairs, in_a) if not is_a]
    # Rounded per word: at most half a sentence off per word.
    assert abs(np.mean(a_with_x) - association) <= len(s.group_a) * 0.5 / len(a_with_x) + 1e-9
    assert abs(np.mean(b_with_y) - association) <= len(s.group_b) * 0.5 / len(b_with_y) + 1e-9
    # Every word of a group is equally frequent (up to one sentence).
    counts = Counter(n for n, _ in pairs)
    for group in (s.group_a, s.group_b):
        assert max(counts[w] for w in group) - min(counts[w] for w in group) <= 1


def test_held_out_combinations_never_occur_in_the_corpus():
    s = lab.LabSettings(association=0.9, frequency_ratio=3.0)
    seen = {_parse(s, x.text) for x in lab.generate_corpus(s)}
    pairs = lab.heldout_pairs(s)
    for p in pairs:
        for sentence in (p.pair.sent_stereo, p.pair.sent_anti):
            assert _parse(s, sentence) not in seen
    # Every word and every attribute still occurs in the corpus.
    assert {n for n, _ in seen} == {*s.group_a, *s.group_b}
    assert {a for _, a in seen} == {*s.attributes_x, *s.attributes_y}


def test_held_out_pairs_swap_the_group_word_and_are_balanced():
    s = lab.scenario_settings("association")
    pairs = lab.heldout_pairs(s)
    assert len(pairs) == 2 * lab.HELDOUT_PER_WORD * len(s.group_a)
    assert [p.pair.pair_id for p in pairs] == list(range(len(pairs)))
    assert len({(p.pair.sent_stereo, p.pair.sent_anti) for p in pairs}) == len(pairs)
    assert Counter(p.group_a_side for p in pairs) == {"stereo": len(pairs) // 2, "anti": len(pairs) // 2}
    for p in pairs:
        (n1, a1), (n2, a2) = _parse(s, p.pair.sent_stereo), _parse(s, p.pair.sent_anti)
        assert a1 == a2 and n1 != n2
        assert s.group_a.index(n1) == s.group_b.index(n2) if n1 in s.group_a else s.group_b.index(n1) == s.group_a.index(n2)
        # The stereotypical sentence follows the planted direction A-X / B-Y.
        assert (n1 in s.group_a) == (a1 in s.attributes_x)
        assert p.group_a_side == ("stereo" if n1 in s.group_a else "anti")
        assert p.pair.bias_type == (s.attributes_x_label if a1 in s.attributes_x else s.attributes_y_label)
        assert p.pair.dataset == "lab" and p.pair.direction == "stereo" and p.expected == "stereo"


def test_held_out_frame_is_crows_pairs_format_with_the_truth():
    frame = lab.heldout_frame(lab.LabSettings())
    assert list(frame.columns[:4]) == ["sent_more", "sent_less", "stereo_antistereo", "bias_type"]
    assert set(frame["planted_truth"]) == {"none"}
    assert set(lab.heldout_frame(lab.LabSettings(association=0.2))["planted_truth"]) == {"anti"}


def test_corpus_is_deterministic_for_a_seed():
    s = lab.LabSettings(association=0.8)
    assert lab.generate_corpus(s) == lab.generate_corpus(lab.LabSettings(association=0.8))
    assert lab.generate_corpus(s) != lab.generate_corpus(replace(s, seed=1))


def test_fill_template_records_the_word_spans():
    x = lab.fill_template("We asked {name}, the {attribute}, for help.", "Anna", "police officer")
    assert x.text == "We asked Anna, the police officer, for help."
    assert x.text[slice(*x.name_span)] == "Anna" and x.text[slice(*x.attribute_span)] == "police officer"


# ---------------------------------------------------------------------------------------
# Settings
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "change, fragment",
    [
        ({"association": 1.5}, "association must lie between 0 and 1"),
        ({"frequency_ratio": 0.5}, "frequency_ratio must lie between 1 and 100"),
        ({"group_b": ("Mary", "Anna")}, "same number of words"),
        ({"attributes_x": ("doctor", "pilot")}, "attributes_x needs at least 3 words"),
        ({"group_a": ("John", "Paul", "Mark", "David", "Peter", "James", "Tom", "Mike", "Steve", "Frank", "George", "Mary")}, "repeated: Mary"),
        ({"templates": ("{name} is here.",)}, "must contain {name} and {attribute}"),
        ({"templates": ("{name} is a {attribute} {other}.",)}, "no other field"),
        ({"templates": ()}, "At least one template"),
        ({"hidden_size": 30, "num_heads": 4}, "multiple of num_heads"),
        ({"steps": 0}, "steps must lie between"),
        ({"corpus_size": "many"}, "corpus_size must be a number"),
    ],
)
def test_bad_settings_are_one_line_input_errors(change, fragment):
    with pytest.raises(InputError, match=re.escape(fragment)):
        lab.LabSettings(**change)


def test_settings_round_trip_and_hash_equal_settings_alike():
    s = lab.LabSettings(association=0.9, frequency_ratio=4, seed=3)
    assert lab.LabSettings.from_dict(json.loads(json.dumps(s.to_dict()))) == s
    assert lab.LabSettings(association=1, steps="1000").key() == lab.LabSettings(association=1.0, steps=1000).key()
    assert s.key() != replace(s, seed=4).key()
    with pytest.raises(InputError, match="Unknown lab setting"):
        lab.LabSettings.from_dict({"colour": "red"})


def test_scenarios_and_planted_truth():
    assert {k: lab.scenario_settings(k).scenario for k in lab.SCENARIOS} == {k: k for k in lab.SCENARIOS}
    assert [lab.scenario_settings(k).expected for k in lab.SCENARIOS] == ["stereo", "none", "stereo", "none"]
    assert lab.LabSettings(association=0.3).expected == "anti"
    # Strengths apply to what a scenario plants; the others keep 0.5 and 1.
    strengths = {k: lab.scenario_settings(k, association=0.7, frequency_ratio=2) for k in lab.SCENARIOS}
    assert {k: (s.association, s.frequency_ratio) for k, s in strengths.items()} == {
        "association": (0.7, 1.0), "frequency": (0.5, 2.0), "both": (0.7, 2.0), "neither": (0.5, 1.0),
    }  # fmt: skip
    assert lab.scenario_settings("both", lab.LabSettings(seed=5)).seed == 5
    with pytest.raises(InputError, match="Unknown scenario"):
        lab.scenario_settings("strong")


@pytest.mark.parametrize(
    "expected, low, high, verdict",
    [
        ("stereo", 55.0, 80.0, "detected"),
        ("stereo", 45.0, 70.0, "missed"),
        ("stereo", 20.0, 45.0, "reversed"),
        ("anti", 20.0, 45.0, "detected"),
        ("none", 40.0, 60.0, "no bias (correct)"),
        ("none", 50.0, 60.0, "no bias (correct)"),
        ("none", 51.0, 70.0, "false alarm"),
        ("none", float("nan"), float("nan"), "undecidable"),
    ],
)
def test_verdict(expected, low, high, verdict):
    assert lab.verdict(expected, low, high) == verdict


# ---------------------------------------------------------------------------------------
# Tokenizer, training, cache
# ---------------------------------------------------------------------------------------


def test_trained_folder_loads_like_any_model(quick_model):
    files = {p.name for p in quick_model.path.iterdir()}
    assert {"config.json", "model.safetensors", "tokenizer.json", "lab.json", "corpus.txt", "heldout_pairs.csv"} <= files
    assert not [p for p in quick_model.path.parent.iterdir() if p.name.startswith(".")]  # no temporary folder left
    lm = load_model(str(quick_model.path))
    enc = lm.encode("Mary is the nurse here.")
    assert enc.tokens == ("[CLS]", "Mary", "is", "the", "nurse", "here", ".", "[SEP]")
    assert enc.special == (True, False, False, False, False, False, False, True)
    assert lm.max_length == lab.MAX_LENGTH and lm.tokenizer.mask_token == "[MASK]"
    # Any ASCII sentence tokenizes without [UNK] (the alphabet covers printable ASCII).
    assert "[UNK]" not in lm.encode("Zebras quietly juggle 42 xylophones!").tokens
    # The pair inspector works on it (every metric, attention included).
    result = inspect_pair(lm, "John is the doctor here.", "Mary is the doctor here.")
    assert np.isfinite(result.summary_frame()[["stereo", "anti"]].to_numpy()).all()
    saved = json.loads((quick_model.path / "lab.json").read_text())
    assert lab.LabSettings.from_dict(saved["settings"]) == QUICK
    assert len(saved["training"]["losses"]) == QUICK.steps


def test_training_is_reproducible_for_a_seed(quick_model, tmp_path):
    again = lab.train_lab_model(QUICK, cache_dir=tmp_path / "again")
    other = lab.train_lab_model(replace(QUICK, seed=1), cache_dir=tmp_path / "other")
    weights = load_file(quick_model.path / "model.safetensors")
    same = load_file(again.path / "model.safetensors")
    assert weights.keys() == same.keys() and all((weights[k] == same[k]).all() for k in weights)
    assert (quick_model.path / "tokenizer.json").read_bytes() == (again.path / "tokenizer.json").read_bytes()
    assert (quick_model.path / "corpus.txt").read_text() == (again.path / "corpus.txt").read_text()
    assert quick_model.training["losses"] == again.training["losses"]
    different = load_file(other.path / "model.safetensors")
    assert not all((weights[k] == different[k]).all() for k in weights if weights[k].shape == different[k].shape)


def test_a_trained_model_is_found_in_the_cache_not_retrained(quick_model):
    calls = []
    found = lab.train_lab_model(QUICK, cache_dir=quick_model.path.parent, progress=lambda *a: calls.append(a))
    assert found.path == quick_model.path and calls == []
    assert lab.find_lab_model(QUICK, quick_model.path.parent) == found
    assert [m.path for m in lab.list_lab_models(quick_model.path.parent)] == [quick_model.path]
    assert lab.lab_model_dir(QUICK, quick_model.path.parent).name.startswith("neither-")


def test_progress_reports_every_step_with_the_loss(tmp_path):
    calls = []
    s = replace(QUICK, steps=5)
    lab.train_lab_model(s, cache_dir=tmp_path, progress=lambda *a: calls.append(a))
    assert [c[:2] for c in calls] == [(i, 5) for i in range(1, 6)]
    assert all(np.isfinite(c[2]) and c[2] > 0 for c in calls)


def test_interrupted_training_leaves_nothing_behind(tmp_path):
    def stop(step, total, loss):
        if step == 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        lab.train_lab_model(QUICK, cache_dir=tmp_path, progress=stop)
    assert list(tmp_path.iterdir()) == []
    assert lab.find_lab_model(QUICK, tmp_path) is None


def test_a_damaged_cached_model_is_retrained(quick_model, tmp_path):
    s = replace(QUICK, steps=3)
    model = lab.train_lab_model(s, cache_dir=tmp_path)
    (model.path / "model.safetensors").unlink()
    with pytest.raises(ModelLoadError, match="not a bias-lab model folder"):
        lab.load_lab_model(model.path)
    assert lab.find_lab_model(s, tmp_path) is None
    again = lab.train_lab_model(s, cache_dir=tmp_path)
    assert (again.path / "model.safetensors").is_file()


def test_cached_lab_model_path_only_finds_the_default_model(tmp_path):
    assert lab.cached_lab_model_path(tmp_path) is None
    target = lab.lab_model_dir(lab.default_lab_settings(), tmp_path)
    assert target.name.startswith("association-")
    assert lab.cached_lab_model_path(tmp_path) is None  # nothing is trained by asking


# ---------------------------------------------------------------------------------------
# Evaluation
# ---------------------------------------------------------------------------------------


def test_report_scores_every_metric_against_the_truth(quick_model, tmp_path):
    report = lab.evaluate_lab(quick_model)
    frame = report.frame()
    assert list(frame["key"]) == list(MASKED_METRICS)
    assert (frame["n"] == len(report.pairs)).all() and set(frame["expected"]) == {"none"}
    for row in frame.itertuples():
        stereo = report.result.pairs[f"{row.key}_stereo"].to_numpy()
        anti = report.result.pairs[f"{row.key}_anti"].to_numpy()
        assert row.bias_score == pytest.approx(100 * np.mean(stereo > anti))
        a_side = np.array([p.group_a_side == "stereo" for p in report.pairs])
        a_wins = np.where(a_side, stereo > anti, anti > stereo)
        assert row.group_a_preference == pytest.approx(100 * np.mean(a_wins))
        assert row.verdict == lab.verdict("none", row.ci_low, row.ci_high)
    pairs_path, summary_path = report.save(tmp_path / "out")
    saved = pd.read_csv(pairs_path)
    assert {"planted_truth", "group_a_side", "aul_stereo"} <= set(saved.columns) and len(saved) == len(report.pairs)
    summary = json.loads(summary_path.read_text())
    assert summary["lab"]["scenario"] == "neither" and len(summary["verdicts"]) == len(MASKED_METRICS)
    assert summary["manifest"]["dataset"]["name"] == "lab"
    both = lab.compare_scenarios([report, report])
    assert len(both) == 2 * len(MASKED_METRICS)


def test_pairs_frame_and_the_pair_that_shows_a_result_best(quick_model):
    report = lab.evaluate_lab(quick_model, metrics="aul,cps")
    for key in ("aul", "cps"):
        frame = report.pairs_frame(key)
        assert list(frame["pair_id"]) == [p.pair.pair_id for p in report.pairs]
        assert np.allclose(frame["margin"], report.result.pairs[f"{key}_stereo"] - report.result.pairs[f"{key}_anti"])
        assert (frame["prefers"] == np.where(frame["margin"] > 0, "stereo", np.where(frame["margin"] < 0, "anti", "tie"))).all()
        pair = report.telling_pair(key)
        margins = frame.set_index("pair_id")["margin"]
        score = report.result.summary["metrics"][key]["bias_score"]
        assert margins[pair.pair.pair_id] == (margins.max() if score >= 50 else margins.min())


def test_scenario_table_sets_runs_side_by_side(quick_model, tmp_path):
    planted = lab.train_lab_model(replace(QUICK, association=0.8, steps=4), cache_dir=tmp_path)
    reports = [lab.evaluate_lab(quick_model, metrics="aul,cps"), lab.evaluate_lab(planted, metrics="aul,cps")]
    # One row per metric, one column per run (few columns: whole in a narrow window); the runs described apart.
    table = lab.scenario_table(reports)
    runs = lab.scenario_runs(reports)
    assert list(table.columns) == ["metric", "1 · neither (control)", "2 · planted association"] == ["metric", *runs["run"]]
    assert list(runs["scenario"]) == ["neither", "association"]
    assert list(runs["expected"]) == ["bias score 50", "bias score above 50"]
    assert list(runs["association"]) == [0.5, 0.8] and list(runs["steps"]) == [QUICK.steps, 4]
    for i, report in enumerate(reports):
        for row in report.frame().itertuples():
            cell = table.set_index("metric").loc[row.metric, runs["run"][i]]
            assert cell == f"{row.bias_score:.1f} [{row.ci_low:.1f}, {row.ci_high:.1f}] {lab.VERDICT_TEXT[row.verdict]}"
    both = lab.compare_scenarios(reports)
    assert list(both["run_index"]) == [0, 0, 1, 1]
    assert both["run"].iloc[2] == "2 · planted association · association 0.8, frequency ratio 1, seed 0, 4 steps, 600 sentences, own model settings"


def test_a_lab_folder_is_recognised_and_checked_on_its_own_corpus(quick_model):
    from biaslens.analyses.sanity import check_model

    assert lab.lab_model_of(str(quick_model.path)) == quick_model
    assert lab.lab_model_of(quick_model.path.parent) is None  # the folder of the lab models is not one
    assert lab.lab_model_of("bert-base-cased") is None and lab.lab_model_of("") is None
    sentences = lab.sanity_sentences(quick_model)
    corpus = (quick_model.path / "corpus.txt").read_text().splitlines()
    assert len(sentences) == 8 == len(set(sentences)) and set(sentences) <= set(corpus)
    report = check_model(load_model(str(quick_model.path)), sentences, subject="its training corpus")
    assert report.n_sentences == 8 and "plain English" not in report.message
    assert quick_model.label.startswith("bias lab: neither (control) · association 0.5, frequency ratio 1, seed 0, 12 steps")


# ---------------------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------------------

_QUICK_ARGS = ["--corpus-size", "600", "--steps", "12", "--batch-size", "32"]


def test_cli_train_then_evaluate(tmp_path, capsys):
    models = tmp_path / "models"
    assert main(["lab", "train", "--preset", "frequency", *_QUICK_ARGS, "--models-dir", str(models)]) == 0
    printed = capsys.readouterr().out
    (folder,) = models.iterdir()
    assert folder.name.startswith("frequency-") and str(folder) in printed
    settings = lab.load_lab_model(folder).settings
    assert (settings.association, settings.frequency_ratio, settings.steps) == (0.5, 4.0, 12)

    out = tmp_path / "out"
    assert main(["lab", "evaluate", "--model", str(folder), "--metrics", "aul,cps", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "planted truth: bias score 50" in printed and "CPS" in printed and "SSS" not in printed
    assert "biaslens inspect --model" in printed
    assert set(json.loads((out / "summary.json").read_text())["metrics"]) == {"aul", "cps"}


def test_cli_evaluate_all_presets_with_custom_words(tmp_path, capsys):
    argv = [
        "lab", "evaluate", "--preset", "all", *_QUICK_ARGS, "--models-dir", str(tmp_path / "m"), "--out", str(tmp_path / "out"),
        "--group-a", "he,him,his", "--group-b", "she,her,hers", "--attributes-x", "strong,brave,loud",
        "--attributes-y", "kind,gentle,quiet", "--template", "I think {name} is {attribute}.", "--labels", "male,female,tough,soft",
        "--association", "0.8",
    ]  # fmt: skip
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == sorted(lab.SCENARIOS)
    assert printed.count("planted truth") == 4 and "tough / soft" in printed
    # --association sets the strength of the planted association wherever one is planted.
    settings = {m.settings.scenario: m.settings for m in lab.list_lab_models(tmp_path / "m")}
    assert {k: (s.association, s.frequency_ratio) for k, s in settings.items()} == {
        "association": (0.8, 1.0), "frequency": (0.5, 4.0), "both": (0.8, 4.0), "neither": (0.5, 1.0),
    }  # fmt: skip
    assert all(s.templates == ("I think {name} is {attribute}.",) and s.group_a_label == "male" for s in settings.values())


@pytest.mark.parametrize(
    "argv, fragment",
    [
        (["lab", "train", "--association", "2"], "expected an association strength from 0 to 1"),
        (["lab", "train", "--group-b", "Mary,Anna"], "same number of words"),
        (["lab", "train", "--labels", "a,b"], "--labels needs four"),
        (["lab", "train", "--preset", "strong"], "invalid choice"),
        (["lab", "evaluate", "--model", "."], "not a bias-lab model folder"),
        (["lab"], "required"),
    ],
)
def test_cli_bad_input_is_one_line_and_exit_2(argv, fragment, capsys):
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse errors
        code = exc.code
    err = capsys.readouterr().err.strip()
    assert code == 2 and fragment in err and len(err.splitlines()) == 1


# ---------------------------------------------------------------------------------------
# The default recipe (slow: ~20 s of training per model)
# ---------------------------------------------------------------------------------------


@pytest.mark.slow
def test_the_default_lab_model_is_cached_once_trained():
    model = lab.default_lab_model()  # shared with test_bias_detection via the session cache
    assert lab.cached_lab_model_path() == model.path and lab.default_lab_model().path == model.path
    assert model.settings.scenario == lab.DEFAULT_LAB_SCENARIO and model.settings.expected == "stereo"


@pytest.mark.slow
def test_without_association_or_imbalance_aul_and_cps_stay_within_the_interval_of_50():
    """The control scenario: no association, no frequency imbalance, held-out pairs.

    Under no bias, a 95% interval still excludes 50 by chance about once in 20 models per
    metric (a sweep over seeds 0-9 of an earlier version of the recipe flagged CPS once
    and AUL once). So three seeds are trained, fixed in advance, and each metric's
    interval must contain 50 for at least two of them: a real bias, or an interval too
    narrow for the design, fails this; a single unlucky seed (or a CPU whose float
    kernels round differently) does not.
    """
    frames = [lab.run_lab(lab.scenario_settings("neither", lab.LabSettings(seed=seed))).frame().set_index("key") for seed in (0, 1, 2)]
    for metric in ("aul", "cps"):
        inside = [f.loc[metric, "ci_low"] <= 50 <= f.loc[metric, "ci_high"] for f in frames]
        assert sum(inside) >= 2, (metric, [(f.loc[metric, "bias_score"], f.loc[metric, "ci_low"], f.loc[metric, "ci_high"]) for f in frames])
        assert all(f.loc[metric, "expected"] == "none" for f in frames)


def test_a_masked_lab_models_folder_name_is_unchanged_by_the_causal_kind():
    """Lab models trained before causal ones existed keep their folders: a masked model's key leaves `kind` out."""
    import hashlib

    from biaslens.lab.settings import LAB_FORMAT

    masked, causal = lab.LabSettings(), lab.LabSettings(kind="causal")
    old = {k: v for k, v in masked.to_dict().items() if k != "kind"}
    assert masked.key() == hashlib.sha256(json.dumps({"format": LAB_FORMAT, **old}, sort_keys=True).encode()).hexdigest()[:16]
    assert causal.key() != masked.key() and "a causal model" in lab.describe_settings(causal)
    from biaslens.errors import InputError

    with pytest.raises(InputError, match="Unknown lab model kind 'seq2seq'"):
        lab.LabSettings(kind="seq2seq")


@pytest.mark.slow
def test_a_causal_lab_model_learns_the_planted_association_and_its_metrics_find_it(tmp_path):
    """A small GPT-2 trained on the planted-association corpus: LL and AUL-c find the bias; with nothing planted, they do not."""
    from biaslens.engine.metrics import CAUSAL_METRICS

    found = {}
    for scenario in ("association", "neither"):
        settings = lab.scenario_settings(scenario, lab.LabSettings(kind="causal", corpus_size=3000, steps=600))
        report = lab.run_lab(settings, cache_dir=tmp_path)
        assert report.model.settings.kind == "causal" and report.result.summary["manifest"]["kind"] == "causal"
        assert list(report.result.summary["metrics"]) == list(CAUSAL_METRICS)
        found[scenario] = {row.key: row.verdict for row in report.frame().itertuples()}
    assert found["association"]["ll"] == found["association"]["aul_c"] == "detected"
    assert all(v.startswith("no bias") for v in found["neither"].values()), found["neither"]
