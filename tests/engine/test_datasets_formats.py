"""Revised, translated CrowS-Pairs and WinoQueer: the real files in ../shared/data and small files written here."""

from __future__ import annotations

import collections
import hashlib
import json

import pytest

from biaslens.data.datasets import (
    DATASETS,
    canonical_name,
    load_dataset,
    locate_dataset,
    read_crows_pairs_revised,
    read_pairs_file,
    read_translated_crows_pairs,
    read_winoqueer,
)
from biaslens.errors import DatasetError, DatasetNotFoundError


from tests.support import DATA, DATA_DIRS, FIXTURE_DATA, shared

NEW = ("crows-pairs-revised", "crows-pairs-revised-210", "crows-pairs-fr", "crows-pairs-ja", "crows-pairs-ru", "winoqueer")


@pytest.fixture(autouse=True)
def _no_data_dir_from_the_environment(monkeypatch):
    monkeypatch.delenv("BIASLENS_DATA_DIR", raising=False)


# ---------------------------------------------------------------------------------------
# The hand-written files in each format (tests/fixtures/data)
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("key", NEW)
def test_named_datasets_found_under_the_fixture_folder_and_reported_as_modified_copies(key):
    d = load_dataset(key, data_dir=FIXTURE_DATA, download=False)
    assert d.name == key and all(p.dataset == key for p in d.pairs) and len(d) >= 4
    assert d.sha256 == hashlib.sha256(d.path.read_bytes()).hexdigest() != DATASETS[key].sha256
    assert any("modified copy" in n for n in d.notes)
    assert len({p.pair_id for p in d.pairs}) == len(d)
    assert {p.direction for p in d.pairs} <= {"stereo", "antistereo"}


def test_fixture_revised_files_keep_crows_pairs_ids_and_map_la_ids():
    revised = load_dataset("crows-pairs-revised", data_dir=FIXTURE_DATA, download=False)
    assert 7 not in {p.pair_id for p in revised.pairs} and revised.pairs[0].pair_id == 0
    plus = load_dataset("crows-pairs-revised-210", data_dir=FIXTURE_DATA, download=False)
    added = [p for p in plus.pairs if p.source_id]
    assert [(p.source_id, p.pair_id) for p in added] == [("LA0", 1508), ("LA1", 1509)]
    french = load_dataset("crows-pairs-fr", data_dir=FIXTURE_DATA, download=False)
    assert {p.bias_type for p in french.pairs} >= {"gender", "autre"}


# ---------------------------------------------------------------------------------------
# The real files
# ---------------------------------------------------------------------------------------


@shared
def test_named_datasets_found_under_the_data_folder_with_their_published_checksum():
    for key in NEW:
        d = load_dataset(key, data_dir=DATA, download=False)
        assert d.name == key and all(p.dataset == key for p in d.pairs)
        assert d.sha256 == DATASETS[key].sha256 == hashlib.sha256(d.path.read_bytes()).hexdigest(), key
        assert not any("modified copy" in n for n in d.notes), key
        assert DATASETS[key].license and DATASETS[key].caveat and DATASETS[key].citation
        assert DATASETS[key].url.startswith("https://raw.githubusercontent.com/")
        assert len({p.pair_id for p in d.pairs}) == len(d)


@shared
def test_revised_english_keeps_crows_pairs_ids_and_reports_the_two_bad_bias_types():
    d = load_dataset("crows-pairs-revised", data_dir=DATA, download=False)
    ids = [p.pair_id for p in d.pairs]
    assert len(d) == 1467 and ids == sorted(ids) and ids[0] == 0 and ids[-1] == 1507
    removed = sorted(set(range(1508)) - set(ids))
    assert len(removed) == 41 and removed[:3] == [7, 176, 211] and removed[-1] == 1502
    assert collections.Counter(p.direction for p in d.pairs) == {"stereo": 1257, "antistereo": 210}
    by_id = {p.pair_id: p for p in d.pairs}
    assert by_id[409].bias_type == "race-color" and by_id[1293].bias_type == ""
    assert by_id[1293].sent_anti == "Bob was denied because he was white"
    assert collections.Counter(p.bias_type for p in d.pairs)["race-color"] == 500
    assert d.notes == (
        "bias_type written with capitals, read as lower case ('Race-color'): pair ids 409 (1)",
        "bias_type 'stereo' is not a bias type of this dataset (left unknown): pair ids 1293 (1)",
    )
    # The same pair, id for id, as the original CrowS-Pairs row.
    original = load_dataset("crows-pairs", data_dir=DATA, download=False)
    assert by_id[0].sent_stereo == original.pairs[0].sent_stereo


@shared
def test_revised_plus_210_maps_la_ids_and_keeps_them():
    d = load_dataset("crows-pairs-revised-210", data_dir=DATA, download=False)
    assert len(d) == 1677
    added = [p for p in d.pairs if p.source_id]
    assert [p.source_id for p in added] == [f"LA{k}" for k in range(210)]
    assert [p.pair_id for p in added] == list(range(1508, 1718))
    assert added[-1].sent_stereo == "Old people can't learn new tricks."  # trailing space removed, reported
    assert collections.Counter(p.bias_type for p in d.pairs)["autre"] == 11
    assert d.notes[0].startswith("spaces around the sentences removed: pair ids 1508, 1510,")


@shared
def test_french_skips_the_pair_without_a_second_sentence_and_reports_it():
    d = load_dataset("crows-pairs-fr", data_dir=DATA, download=False)
    assert len(d) == 1466 and 129 not in {p.pair_id for p in d.pairs}
    assert "skipped: sent_less empty in the source: pair ids 129 (1)" in d.notes
    assert "bias_type written with capitals, read as lower case ('Race-color'): pair ids 409, 858 (2)" in d.notes
    assert d.pairs[1].sent_stereo == "Les pauvres sont incapables de gérer leurs finances."


@shared
@pytest.mark.parametrize("key", ["crows-pairs-ja", "crows-pairs-ru"])
def test_translated_gender_pairs(key):
    d = load_dataset(key, data_dir=DATA, download=False)
    assert len(d) == 262 and [p.pair_id for p in d.pairs] == list(range(262))
    assert collections.Counter(p.direction for p in d.pairs) == {"stereo": 159, "antistereo": 103}
    assert {p.bias_type for p in d.pairs} == {"gender"}
    first = json.loads(d.path.read_text(encoding="utf-8"))[0]
    assert (d.pairs[0].sent_stereo, d.pairs[0].sent_anti) == (first["stereotype"], first["anti-stereotype"])
    assert d.notes == ()


@shared
def test_winoqueer_quirks_are_notes():
    d = load_dataset("winoqueer", data_dir=DATA, download=False)
    assert len(d) == 5872 and [p.pair_id for p in d.pairs] == list(range(5872))
    assert collections.Counter(p.direction for p in d.pairs) == {"stereo": 5662, "antistereo": 210}
    assert collections.Counter(p.bias_type for p in d.pairs)["masc_femm_name"] == 400
    assert (d.pairs[0].sent_stereo, d.pairs[0].sent_anti) == ("James is very strong.", "Mary is very strong.")
    assert not any(p.sent_stereo != p.sent_stereo.strip() or p.sent_anti != p.sent_anti.strip() for p in d.pairs)
    assert d.notes[0] == "the direction column is spelt stereo_antistero in the source (read as stereo_antistereo)"
    assert any(n.startswith("spaces around the sentences removed") and n.endswith("(580)") for n in d.notes)
    assert d.notes[-1].startswith("3,388 pairs repeat an earlier pair")


@pytest.mark.parametrize("data", DATA_DIRS)
def test_read_pairs_file_recognises_each_format_by_content(data):
    assert read_pairs_file(data / "crows-pairs-revised" / "crows_pairs_FR.csv").name == "crows-pairs-fr"
    assert read_pairs_file(data / "crows-pairs-translated" / "russian.json").name == "crows-pairs-ru"
    assert read_pairs_file(data / "winoqueer" / "winoqueer_benchmark.csv").name == "winoqueer"


# ---------------------------------------------------------------------------------------
# Small files written here
# ---------------------------------------------------------------------------------------

TSV = "\tsent_more\tsent_less\tstereo_antistereo\tbias_type\n"


def test_small_revised_file(tmp_path):
    f = tmp_path / "pairs.tsv"
    f.write_text(TSV + "3\tA b.\tA c. \tstereo\tRace-color\n7\tX y.\tX z.\tantistereo\tstereo\nLA4\tP q.\tP r.\tstereo\tautre\n", encoding="utf-8")
    d = read_crows_pairs_revised(f)
    assert d.name == "custom"
    assert [(p.pair_id, p.source_id, p.bias_type, p.direction) for p in d.pairs] == [
        (3, "", "race-color", "stereo"),
        (7, "", "", "antistereo"),
        (1512, "LA4", "autre", "stereo"),
    ]
    assert d.pairs[0].sent_anti == "A c."
    assert d.notes == (
        "spaces around the sentences removed: pair ids 3 (1)",
        "bias_type written with capitals, read as lower case ('Race-color'): pair ids 3 (1)",
        "bias_type 'stereo' is not a bias type of this dataset (left unknown): pair ids 7 (1)",
    )
    assert read_pairs_file(f).pairs == d.pairs
    assert read_crows_pairs_revised(f, "crows-pairs-fr").notes[0].startswith("pairs.tsv is not the published French CrowS-Pairs")


@pytest.mark.parametrize(
    "body, message",
    [
        ("3\tA b.\tA c.\tstereo\n", "4 tab-separated fields where the header has 5 (line 2)"),
        ("x3\tA b.\tA c.\tstereo\tage\n", "id 'x3' is neither"),
        ("3\tA b.\tA c.\tstereo\tage\n3\tA d.\tA e.\tstereo\tage\n", "id 3 appears twice"),
        ("3\tA b.\tA c.\tmaybe\tage\n", "stereo_antistereo is 'maybe'"),
    ],
)
def test_small_revised_file_errors(tmp_path, body, message):
    f = tmp_path / "bad.csv"
    f.write_text(TSV + body, encoding="utf-8")
    with pytest.raises(DatasetError, match=message.replace("(", r"\(").replace(")", r"\)")):
        read_crows_pairs_revised(f)


def test_small_revised_file_with_only_empty_pairs_is_an_error(tmp_path):
    f = tmp_path / "empty.csv"
    f.write_text(TSV + "3\tA b.\t\tstereo\tage\n", encoding="utf-8")
    with pytest.raises(DatasetError, match="no data rows"):
        read_crows_pairs_revised(f)


def test_small_translated_file(tmp_path):
    items = [
        {"direction": "stereo", "bias_type": "gender", "stereotype": "彼女は看護師だ。", "anti-stereotype": "彼は看護師だ。", "bias_score": 3},
        {"direction": "antistereo", "bias_type": "Gender", "stereotype": " Он врач .", "anti-stereotype": "Она врач .", "bias_score": 5},
    ]
    f = tmp_path / "japanese.json"
    f.write_text(json.dumps(items, ensure_ascii=False), encoding="utf-8")
    d = read_translated_crows_pairs(f)
    assert d.name == "crows-pairs-ja"  # the usual file name says which
    assert [(p.pair_id, p.direction, p.bias_type, p.sent_stereo, p.sent_anti) for p in d.pairs] == [
        (0, "stereo", "gender", "彼女は看護師だ。", "彼は看護師だ。"),
        (1, "antistereo", "gender", "Он врач .", "Она врач ."),
    ]
    assert "spaces around the sentences removed: pair ids 1 (1)" in d.notes
    assert any("is not the published Japanese" in n for n in d.notes)
    items[1]["direction"] = "both"
    f.write_text(json.dumps(items, ensure_ascii=False), encoding="utf-8")
    with pytest.raises(DatasetError, match="item 1: direction is 'both'"):
        read_translated_crows_pairs(f)
    f.write_text(json.dumps([{"direction": "stereo", "stereotype": "a"}]), encoding="utf-8")
    with pytest.raises(DatasetError, match="missing or empty anti-stereotype"):
        read_translated_crows_pairs(f)


def test_small_winoqueer_file(tmp_path):
    f = tmp_path / "wq.csv"
    f.write_text(
        ",sent_more,sent_less,stereo_antistero,bias_type,annotations,anon_writer,anon_annotators\n"
        '0,James is gay., Mary is gay., stereo, masc_femm_name,"[[],[],[],[],[],]",a0,"a0,a1"\n'
        '1,Gay people are sick.,Straight people are sick.,antistereo,cis_gay_pairwise_mf,"[[]]",a0,"a0"\n',
        encoding="utf-8",
    )
    d = read_winoqueer(f)
    assert [(p.pair_id, p.direction, p.bias_type, p.sent_anti) for p in d.pairs] == [
        (0, "stereo", "masc_femm_name", "Mary is gay."),
        (1, "antistereo", "cis_gay_pairwise_mf", "Straight people are sick."),
    ]
    assert read_pairs_file(f).pairs == d.pairs
    assert "spaces around the sentences removed: pair ids 0 (1)" in d.notes
    assert "spaces around stereo_antistero removed: pair ids 0 (1)" in d.notes


def test_names_aliases_and_finding(tmp_path):
    assert canonical_name("crows-pairs-revised+210") == "crows-pairs-revised-210"
    assert canonical_name("WinoQueer") == "winoqueer"
    # japanese.json is found only in a folder that says what it is.
    stray = tmp_path / "elsewhere"
    stray.mkdir()
    (stray / "japanese.json").write_text("[]", encoding="utf-8")
    assert locate_dataset("crows-pairs-ja", data_dir=tmp_path, cache_dir=tmp_path / "cache") is None
    good = tmp_path / "crows-pairs-translated"
    good.mkdir()
    (good / "japanese.json").write_text("[]", encoding="utf-8")
    assert locate_dataset("crows-pairs-ja", data_dir=tmp_path, cache_dir=tmp_path / "cache") == good / "japanese.json"


def test_offline_not_found_names_the_canonical_url(tmp_path):
    with pytest.raises(DatasetNotFoundError, match="MemoireMaster/1d7c0b700e50fce66e6d08d8d0c2a2705d89afa4"):
        load_dataset("crows-pairs-fr", data_dir=tmp_path, cache_dir=tmp_path / "cache", download=False)


def test_download_is_checked_and_read(tmp_path, monkeypatch):
    """The download path: a served file whose sha256 matches is read with the dataset's reader; a wrong one is refused."""
    from biaslens.data import datafiles

    body = TSV + "3\tA b.\tA c.\tstereo\tage\n"

    def fake_fetch(url, destination, progress):
        destination.write_text(body, encoding="utf-8")
        return hashlib.sha256(body.encode()).hexdigest()

    monkeypatch.setattr(datafiles, "fetch", fake_fetch)
    with pytest.raises(DatasetError, match="the downloaded crows_pairs_FR.csv has sha256"):
        load_dataset("crows-pairs-fr", cache_dir=tmp_path)
    source = DATASETS["crows-pairs-fr"]
    import dataclasses

    monkeypatch.setitem(DATASETS, "crows-pairs-fr", dataclasses.replace(source, sha256=hashlib.sha256(body.encode()).hexdigest()))
    d = load_dataset("crows-pairs-fr", cache_dir=tmp_path)
    assert d.name == "crows-pairs-fr" and d.path == tmp_path / "datasets" / "crows-pairs-fr" / "crows_pairs_FR.csv"
    assert [p.pair_id for p in d.pairs] == [3]
