"""Paper analyses page with AppTest: every section shows the engine's own numbers for the same pairs."""

from __future__ import annotations

import io
import zipfile

import pandas as pd
import pytest

from tests.support.app import no_exceptions, run_app, tables, texts
from biaslens.analyses import explore
from biaslens.analyses.papers import SOURCE_RUN, bias_score_table, compare_accuracy, paper_layout, token_ranks
from biaslens.data.datasets import load_dataset
from biaslens.data.export import safe_csv
from biaslens.figures.formatting import column_label
from biaslens.report.reproduction import ReportOptions, analyse_model, build_report, report_files, zip_report
from biaslens.analyses.shuffle import shuffle_sentence
from tests.support import FIXTURE_DATA


S = "analyses."
N = 5  # pairs per dataset (seed 0): both Adv and Dis pairs, both human labels, and the page stays fast on 2 cores
SENTENCE = "The old farmer sold fresh eggs and warm bread at the market."


def _frames(at) -> list[pd.DataFrame]:
    """Every table of the page as shown: people's headers, numbers at full precision, blank cells missing."""
    return [frame.apply(_numbers) for frame in tables(at)]


def _numbers(column: pd.Series) -> pd.Series:
    try:
        return pd.to_numeric(column)
    except (TypeError, ValueError):
        return column


def _as_shown(frame: pd.DataFrame) -> pd.DataFrame:
    """An engine table as the page shows it: metrics by name only, headers for people (`biaslens.figures.formatting.column_label`)."""
    if {"metric", "name"} <= set(frame.columns):
        frame = frame.drop(columns="metric")
    return frame.set_axis([column_label(str(c)) for c in frame.columns], axis=1)


def _find(at, columns: set[str]) -> list[pd.DataFrame]:
    return [f for f in _frames(at) if columns <= set(map(str, f.columns))]


def _same(shown: pd.DataFrame, want: pd.DataFrame) -> bool:
    try:
        pd.testing.assert_frame_equal(shown.reset_index(drop=True), _as_shown(want).reset_index(drop=True), check_dtype=False)
    except AssertionError:
        return False
    return True


@pytest.fixture(scope="module")
def engine(model_dirs, tiny_models):
    """The engine's own analyses of the tiny BERT on the same N pairs, computed without the app or its cache."""
    datasets = {name: load_dataset(name, data_dir=FIXTURE_DATA) for name in ("crows-pairs", "stereoset")}
    options = ReportOptions(sample=N, seed=0, shuffle_seed=0)
    label = explore.short_names([str(model_dirs["bert-cased"])])[str(model_dirs["bert-cased"])]
    analysed = analyse_model(tiny_models["bert-cased"], datasets, options, label=label)
    return {"datasets": datasets, "options": options, "analysed": analysed, "report": build_report([analysed], datasets, options), "label": label}


def test_every_section_shows_the_engines_numbers(app_env, tiny_models, engine):
    at = run_app("analyses", {"sample": str(N)})
    no_exceptions(at)
    assert "Not run yet" in texts(at.info)
    assert len(at.warning) >= 2  # a content warning per dataset (and the untrained model's warning later)
    assert at.toggle(key=S + "sample_on").label == "Score a random sample of each dataset (the largest has 16 pairs)"
    at.button(key=S + "run").click().run()
    no_exceptions(at)
    assert "Not run yet" not in texts(at.info)

    shown = _frames(at)
    report = engine["report"]
    # Every table of every report section (Tables 1-4, Figure 1's AUCs) is on the page, value for value.
    for title, _text, shown_tables, _stem in report.sections():
        for caption, want in shown_tables:
            assert any(_same(f, want) for f in shown), (title, caption)

    # Table 1 from the lower-level engine calls, independently of the report.
    lm = tiny_models["bert-cased"]
    label = engine["label"]
    table1 = next(f for f in _find(at, {"CPS (CP)", "AUL (CP)", "SSS (SS)", "AUL (SS)"}))
    own = table1[table1["Source"] == SOURCE_RUN].iloc[0]
    assert own["Model"] == label
    cp = compare_accuracy(token_ranks(lm, engine["datasets"]["crows-pairs"], sample=N, seed=0))
    ss = compare_accuracy(token_ranks(lm, engine["datasets"]["stereoset"], sample=N, seed=0))
    assert own["CPS (CP)"] == pytest.approx(cp.value("cps")) and own["AUL (CP)"] == pytest.approx(cp.value("aul"))
    assert own["SSS (SS)"] == pytest.approx(ss.value("sss")) and own["AUL (SS)"] == pytest.approx(ss.value("aul"))
    published = table1[table1["Model"] == "bert-base-cased (published)"].iloc[0]
    assert published["AUL (CP)"] == 82.76
    mcnemar = next(f for f in _find(at, {"masked metric right, AUL wrong", "p"}))
    assert mcnemar["p"].tolist() == pytest.approx([cp.mcnemar.p_value, ss.mcnemar.p_value])
    assert f"McNemar, {cp.mcnemar.method}: p = {cp.mcnemar.p_value:.3g}" in texts(at.markdown)

    # Table 3: Adv / Dis / |difference| of the CrowS-Pairs run.
    groups = engine["analysed"].evaluations["crows-pairs"].summary["metrics"]
    table3 = next(f for f in _find(at, {"AUL Adv", "AUL Dis", "AUL Diff"}))
    row = table3[table3["Source"] == SOURCE_RUN].iloc[0]
    for metric, name in (("all_masked", "All Masked"), ("aul", "AUL"), ("aula", "AULA")):
        adv, dis = groups[metric]["by_group"]["adv"]["bias_score"], groups[metric]["by_group"]["dis"]["bias_score"]
        assert (row[f"{name} Adv"], row[f"{name} Dis"]) == pytest.approx((adv, dis))
        assert row[f"{name} Diff"] == pytest.approx(abs(adv - dis))

    # Table 4 carries the seed and McNemar's test; Figure 1 is drawn with one AUC per metric.
    shuffle = engine["analysed"].shuffle
    table4 = next(f for f in _find(at, {"CP original", "CP shuffled", "SS unrelated"}))
    row = table4[table4["Source"] == SOURCE_RUN].iloc[0]
    assert row["SS unrelated"] == pytest.approx(shuffle[1].accuracy.set_index("condition").loc["unrelated", "accuracy"])
    auc = next(f for f in _find(at, {"AUC", "Positives"}))
    assert auc["AUC"].tolist() == pytest.approx(engine["analysed"].agreement.auc["auc"].tolist())
    assert len(at.get("vega_lite_chart")) >= 7  # Tables 1-5, Figure 1, the shuffled sentence

    # Table 5: this model's bias scores beside the published ones.
    want5 = bias_score_table({label: engine["analysed"].evaluations})
    want5 = paper_layout(want5[want5["metric"].isin(engine["options"].metrics) | (want5["source"] != SOURCE_RUN)], "bias_score")
    assert any(_same(f, want5) for f in shown)

    # The report: a download button, and the same command line.
    assert at.get("download_button")
    assert f"--sample {N} --seed 0" in texts(at.code)

    # Reopening is instant: a fresh session finds the finished analyses without a click.
    again = run_app("analyses", {"sample": str(N)})
    no_exceptions(again)
    assert "Not run yet" not in texts(again.info)
    assert any(_same(f, table1) for f in _frames(again))


def test_summary_adds_a_second_model(app_env, model_dirs, tiny_models):
    roberta = str(model_dirs["roberta"])
    # The second model as a folder path typed into the box (AppTest can only pick options by their shown name).
    state = {S + "analyses": ["scores"], S + "datasets": ["crows-pairs"], S + "models": [str(model_dirs["bert-cased"]), roberta]}
    at = run_app("analyses", {"sample": "4"}, state=state)
    no_exceptions(at)
    assert "Not scored yet with these options" in texts(at.info)
    at.button(key=S + "score_models").click().run()
    no_exceptions(at)
    assert "Not scored yet" not in texts(at.info)
    dataset = load_dataset("crows-pairs", data_dir=FIXTURE_DATA)
    options = ReportOptions(analyses=("scores",), sample=4)
    names = explore.short_names([str(model_dirs["bert-cased"]), roberta])
    results = {
        names[str(model_dirs[f])]: analyse_model(tiny_models[f], {"crows-pairs": dataset}, options).evaluations for f in ("bert-cased", "roberta")
    }
    want = bias_score_table(results)
    want = paper_layout(want[want["metric"].isin(options.metrics) | (want["source"] != SOURCE_RUN)], "bias_score")
    table = next(f for f in _find(at, {"AUL (CP)", "Model"}) if names[roberta] in set(f["Model"]))
    assert _same(table, want)


def test_shuffle_box_reshuffles_deterministically(app_env, tiny_models):
    lm = tiny_models["bert-cased"]
    at = run_app("analyses")
    no_exceptions(at)
    at.text_input(key=S + "sentence").input(SENTENCE).run()
    no_exceptions(at)

    def tokens(at) -> pd.DataFrame:
        """The shown token table, under the engine's column names (its text columns as the engine has them)."""
        shown = next(f for f in _find(at, {"log p shuffled", "New position"}))
        names = ["position", "token", "special", "logprob", "rank", "prediction", "new_position", "shuffled_logprob"]
        names += ["shuffled_rank", "shuffled_prediction"]
        return shown.set_axis(names, axis=1).assign(special=[v == "yes" for v in shown["Special"]])

    first = shuffle_sentence(lm, SENTENCE, seed=0)
    assert list(first.tokens.columns) == list(tokens(at).columns)  # every column, in the engine's order
    pd.testing.assert_frame_equal(tokens(at), first.tokens, check_dtype=False)
    assert f"Shuffled (seed 0): **{first.shuffled.text}**" in texts(at.markdown)

    at.button(key=S + "reshuffle").click().run()
    no_exceptions(at)
    second = shuffle_sentence(lm, SENTENCE, seed=1)
    assert second.tokens["new_position"].tolist() != first.tokens["new_position"].tolist()
    pd.testing.assert_frame_equal(tokens(at), second.tokens, check_dtype=False)
    assert f"Shuffled (seed 1): **{second.shuffled.text}**" in texts(at.markdown)

    at.button(key=S + "reshuffle").click().run()
    assert tokens(at)["new_position"].tolist() == shuffle_sentence(lm, SENTENCE, seed=2).tokens["new_position"].tolist()

    at.text_input(key=S + "sentence").input("   ").run()
    no_exceptions(at)
    errors = at.main.error  # the sidebar flags the untrained tiny model on its own
    assert len(errors) == 1 and "The sentence is empty" in errors[0].value
    assert not _find(at, {"log p shuffled"})


def test_report_zip_holds_the_report_files(engine):
    report = engine["report"]
    archive = zipfile.ZipFile(io.BytesIO(zip_report(report)))
    names = {n.removeprefix("biaslens-report/") for n in archive.namelist()}
    assert {"report.html", "report.md", "manifest.json", "figures/figure1_roc.svg"} <= names
    assert {f"{stem}.csv" for stem in report.tables()} <= names
    top = {n for n in names if "/" not in n}  # what `biaslens report` checks its --out for before scoring: the same names
    assert top <= set(report_files(engine["options"])) and len(top) > 10
    assert any(n.startswith("runs/") and n.endswith("crows-pairs/pairs.csv") for n in names)
    assert archive.read("biaslens-report/table1_token_accuracy.csv") == safe_csv(report.tables()["table1_token_accuracy"]).encode()


def test_the_shuffled_sentence_of_a_lab_model_is_one_it_knows(app_env):
    """A lab model knows only its own words: the Shuffle box starts from its first held-out sentence (issue 21, item 10)."""
    from biaslens import lab

    model = lab.train_lab_model(lab.scenario_settings("association", lab.LabSettings(corpus_size=600, steps=12, batch_size=32)))
    at = run_app("analyses", {"model": str(model.path)})
    no_exceptions(at)
    assert at.text_input(key=S + "sentence").value == lab.heldout_pairs(model.settings)[0].pair.sent_stereo


def test_before_a_run_one_box_says_what_to_do(app_env):
    """Issue 40 item 12: the page showed seven identical "Run the analyses above…" boxes, one in each tab, before a run."""
    at = run_app("analyses")
    no_exceptions(at)
    boxes = [str(i.value) for i in at.main.info if "Run the analyses" in str(i.value)]
    assert len(boxes) == 1, boxes
