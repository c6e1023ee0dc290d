"""WEAT stimuli (SEAT's format): reading, finding, downloading, and Kurita's five WEAT-style tests."""

import shutil
import urllib.error

import numpy as np
import pytest

from biaslens.data import datafiles, weat
from biaslens.errors import DatasetError, DatasetNotFoundError, InputError
from biaslens.figures.charts import effect_size_chart
from biaslens.kurita import KURITA_CATEGORIES, kurita_weat_spec, weat_table, weat_test
from biaslens.data.published import KURITA_WEAT
from biaslens.data.weat import WEAT_SHA256, load_weat, locate_weat, read_weat_file, weat_url
from tests.support import DATA, FIXTURE_DATA, shared

WEAT_DIR = FIXTURE_DATA / "weat"


@shared
def test_every_known_file_reads_and_matches_its_checksum():
    for name, sha256 in WEAT_SHA256.items():
        stimuli = read_weat_file(DATA / "weat" / f"{name}.jsonl")
        assert stimuli.name == name and stimuli.sha256 == sha256
    career = read_weat_file(DATA / "weat" / "weat6.jsonl")
    assert career.attr1.category == "Career" and career.attr1.words[:2] == ("executive", "management")
    assert career.targ2.category == "FemaleNames" and len(career.targ2.words) == 8


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("{", "malformed JSON"),
        ("[1, 2]", "one JSON object"),
        ('{"targ1": {"category": "A", "examples": []}}', "targ1 must be"),
        (
            '{"targ1": {"category": "A", "examples": ["x"]}, "targ2": {"category": "B", "examples": ["y", " "]},'
            ' "attr1": {"category": "C", "examples": ["z"]}, "attr2": {"category": "D", "examples": ["w"]}}',
            "targ2 (B) holds ' '",
        ),
    ],
)
def test_malformed_files_name_the_file_and_the_problem(tmp_path, text, fragment):
    path = tmp_path / "weat1.jsonl"
    path.write_text(text)
    with pytest.raises(DatasetError, match="weat1.jsonl") as exc:
        read_weat_file(path)
    assert fragment in str(exc.value)


def test_found_recursively_in_the_data_folder_and_by_environment(tmp_path, monkeypatch):
    nested = tmp_path / "data" / "some" / "where"
    nested.mkdir(parents=True)
    shutil.copy(WEAT_DIR / "weat7.jsonl", nested / "weat7.jsonl")
    shutil.copy(WEAT_DIR / "sent-weat7.jsonl", nested / "sent-weat7.jsonl")  # not a word-level file
    assert locate_weat("weat7", data_dir=tmp_path / "data", cache_dir=tmp_path / "cache") == nested / "weat7.jsonl"
    assert locate_weat("weat7.jsonl", data_dir=tmp_path / "data", cache_dir=tmp_path / "cache") == nested / "weat7.jsonl"
    monkeypatch.setenv("BIASLENS_DATA_DIR", str(tmp_path / "data"))
    assert load_weat("weat7", cache_dir=tmp_path / "cache", download=False).targ1.category == "Math"
    assert locate_weat("weat8", cache_dir=tmp_path / "cache") is None
    with pytest.raises(DatasetError, match="no WEAT test named 'weat99'"):
        locate_weat("weat99")


def test_offline_without_a_copy_is_one_line_naming_file_and_folder(tmp_path, monkeypatch):
    monkeypatch.delenv("BIASLENS_DATA_DIR", raising=False)

    def unreachable(url, destination, progress):
        raise urllib.error.URLError("no route to host")

    monkeypatch.setattr(datafiles, "fetch", unreachable)
    for download in (False, True):
        with pytest.raises(DatasetNotFoundError) as exc:
            load_weat("weat6", cache_dir=tmp_path, download=download)
        message = str(exc.value)
        assert "weat6.jsonl" in message and str(tmp_path / "datasets" / "weat") in message and "\n" not in message
        assert weat_url("weat6") in message
    assert "no route to host" in message
    assert not list((tmp_path / "datasets" / "weat").iterdir())  # no partial file left behind


def test_download_is_verified_then_cached(tmp_path, monkeypatch):
    monkeypatch.delenv("BIASLENS_DATA_DIR", raising=False)
    fetched = []

    def from_the_fixtures(url, destination, progress):  # as if the published file had come
        fetched.append(url)
        name = url.rsplit("/", 1)[-1]
        destination.write_bytes((WEAT_DIR / name).read_bytes())
        return WEAT_SHA256[name.removesuffix(".jsonl")]

    monkeypatch.setattr(datafiles, "fetch", from_the_fixtures)
    stimuli = load_weat("weat8", cache_dir=tmp_path)
    assert stimuli.path == tmp_path / "datasets" / "weat" / "weat8.jsonl" and stimuli.targ1.category == "Science"
    assert fetched == [f"https://raw.githubusercontent.com/W4ngatang/sent-bias/{weat.SENT_BIAS_COMMIT}/tests/weat8.jsonl"]
    load_weat("weat8", cache_dir=tmp_path)
    assert len(fetched) == 1  # second time from the cache

    def tampered(url, destination, progress):
        destination.write_text('{"targ1": {}}')
        return "0" * 64

    monkeypatch.setattr(datafiles, "fetch", tampered)
    with pytest.raises(DatasetError, match="sha256"):
        load_weat("weat1", cache_dir=tmp_path)
    assert sorted(p.name for p in (tmp_path / "datasets" / "weat").iterdir()) == ["weat8.jsonl"]


@pytest.mark.parametrize(
    "weat_dir, pleasant, career",
    [
        pytest.param(WEAT_DIR, 10, 4, id="fixtures"),
        pytest.param(DATA / "weat", 25, 8, id="shared", marks=shared),
    ],
)
def test_the_five_categories_take_the_right_word_sets(weat_dir, pleasant, career):
    sets = {}
    for key, category in KURITA_CATEGORIES.items():
        spec = kurita_weat_spec(key, read_weat_file(weat_dir / f"{category.weat}.jsonl"))
        sets[key] = (spec.attributes_1.category, spec.attributes_2.category, len(spec.attributes_1.words))
        assert spec.label == KURITA_WEAT[key]["label"]
    assert sets == {
        "insects_flowers": ("Pleasant", "Unpleasant", pleasant),
        "ea_aa": ("Pleasant", "Unpleasant", pleasant),
        "career_family": ("Career", "Family", career),
        "math_arts": ("Math", "Arts", career),
        "science_arts": ("Science", "Arts", career),
    }
    with pytest.raises(InputError, match="reads weat6.jsonl"):
        kurita_weat_spec("career_family", read_weat_file(weat_dir / "weat7.jsonl"))
    with pytest.raises(InputError, match="No Kurita WEAT test"):
        kurita_weat_spec("nope", read_weat_file(weat_dir / "weat7.jsonl"))


def test_table3_runs_end_to_end_on_a_tiny_model(tiny_bert):
    results = []
    for key, category in KURITA_CATEGORIES.items():
        spec = kurita_weat_spec(key, load_weat(category.weat, data_dir=FIXTURE_DATA, download=False))
        results.append(weat_test(tiny_bert, spec, n_permutations=300, seed=3))
    table = weat_table(results).set_index("test")
    assert list(table.index) == list(KURITA_CATEGORIES)
    # The tiny model is not the paper's bert-base-uncased: every published column says so instead of a number.
    assert table["published_log_prob"].isna().all() and table["published"].str.startswith("not comparable: model").all()
    assert set(KURITA_WEAT) == set(KURITA_CATEGORIES)
    assert table.loc["career_family", "p_method"] == "exact, 70 partitions"  # 4 + 4 words (the real files: 8 + 8)
    assert table.loc["ea_aa", "p_method"] == "300 permutations, seed 3"
    assert table.loc["career_family", "targets"] == "he, boys, men / she, girls, women"
    assert np.all(np.abs(table["effect_size"]) < 2) and table["p_value"].between(0, 1).all()
    assert table["p_two_sided"].between(0, 1).all()
    # The effect size is the stats module's d over the per-word scores.
    units = results[2].units
    s1, s2 = units.loc[units["group"] == 1, "s"], units.loc[units["group"] == 2, "s"]
    assert results[2].effect_size == pytest.approx((s1.mean() - s2.mean()) / np.std(units["s"], ddof=1))
    # Same seed, same p; the gender templates are restricted to agreeing targets.
    again = weat_test(tiny_bert, results[1].spec, n_permutations=300, seed=3)
    assert again.p_value == results[1].p_value
    frame = results[2].scores.frame
    assert set(frame.loc[frame["template"] == "[T] like [A].", "target"]) == {"boys", "girls", "men", "women"}
    assert len(frame) == 8 * (2 + 4 + 2)
    by_target = weat_test(tiny_bert, results[2].spec, permute="targets")
    assert by_target.exact and by_target.n_permutations == 20 and len(by_target.units) == 6
    assert len(effect_size_chart(table.reset_index()).to_dict()["layer"]) == 2
