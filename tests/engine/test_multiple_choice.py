"""biaslens.data.multiple_choice: BBQ and Winogender items, their biased answers as lm-eval reads them, files and downloads.

Hand-written fixtures (tests/fixtures/data/bbq, winogender) for a fresh clone; the real files (../shared) for the counts.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter

import pytest

from biaslens.data import datafiles
from biaslens.data.multiple_choice import (
    CHOICE_DATASETS,
    CHOICE_SUBSETS,
    bbq_groups,
    choice_dataset_name,
    is_choice_path,
    load_choice_dataset,
    read_bbq,
    read_choice_path,
    read_winogender,
)
from biaslens.errors import DatasetError, DatasetNotFoundError
from tests.support import DATA, FIXTURE_DATA, shared

BBQ = FIXTURE_DATA / "bbq"
WINOGENDER = FIXTURE_DATA / "winogender"


def test_bbq_groups_follow_lm_evals_string_handling():
    """lm-eval's _process_groups_in_answers, quirks included: 'man' anywhere gets 'M_', intersectional prefixes split."""
    assert bbq_groups(["grandfather", "old"], "The grandfather") == ("grandfather", "old")
    assert bbq_groups(["German", "Europe"], "The German") == ("germ", "man", "europe")  # "German" holds "man"
    assert bbq_groups(["woman", "F"], "The woman") == ("f", "woman", "f")
    assert bbq_groups(["F-Black", "F-Black"], "The Black woman") == ("f", "black", "f", "black")
    assert bbq_groups(["lowSES-African", "lowSES"], "x") == ("low ses", "african", "low ses")
    assert bbq_groups(["boy", "nonTrans"], "x") == ("m", "boy", "non trans")
    assert bbq_groups([], "The Latina woman") == ("latino",)
    assert bbq_groups([], "The other one") == ()


def test_bbq_items_their_biased_answers_and_notes():
    data = read_choice_path(BBQ)
    assert data.name == "bbq" and data.family == "bbq" and len(data) == 26  # every category, in lm-eval's order
    assert [it.item_id for it in data.items] == list(range(26)) and data.items[6].source_id == "Disability_status/0"
    by_id = {it.source_id: it for it in data.items}
    age = data.items[0]
    assert (age.source_id, age.condition, age.polarity, age.label, age.unknown) == ("Age/0", "ambig", "neg", 2, 2)
    assert age.choices == ("The retired teacher", "The college student", "Not known") and age.correct == "Not known"
    assert [it.biased for it in data.items[:6]] == [(0,), (0,), (1,), (1,), (1,), (1,)]  # neg: the old; nonneg: the other
    german, brazilian = by_id["Nationality/0"], by_id["Nationality/1"]
    assert german.biased == (2,) and brazilian.biased == (0,)  # "German" read as groups germ, man, europe
    unmatched, both = by_id["Race_x_gender/0"], by_id["Race_x_gender/1"]
    assert unmatched.biased == ()  # "F-Black" is split on "_" into f, black: lm-eval never matches "f-black"
    assert both.biased == (0, 1) and both.groups[1] == ("latino",)
    assert any("without a biased answer" in n and "Race_x_gender/0" in n for n in data.notes)
    assert by_id["Race_x_SES/0"].biased == (0,) and by_id["SES/1"].biased == (1,)  # "lowSES-Black": low ses, black
    assert not any("categories not in these files" in n for n in data.notes)
    two = read_bbq([BBQ / "Age.jsonl", BBQ / "SES.jsonl"])
    assert len(two) == 8 and any("9 of BBQ's 11 categories not in these files" in n for n in two.notes)
    assert any(n.startswith("Age.jsonl is not the published file") for n in data.notes)
    frame = data.to_frame()
    assert list(frame["source_id"][:2]) == ["Age/0", "Age/1"]
    assert str(frame["choices"].iloc[0]) == "The retired teacher | The college student | Not known"


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"example_id": 0}', "missing field"),
        ("[1, 2]", "expected one JSON object per line"),
        ("{not json", "malformed JSON line"),
    ],
)
def test_bbq_lines_are_refused_with_file_and_row(tmp_path, line, message):
    good = (BBQ / "Age.jsonl").read_text().splitlines()[0]
    path = tmp_path / "Age.jsonl"
    path.write_text(good + "\n" + line + "\n")
    with pytest.raises(DatasetError, match=f"Age.jsonl, row 2: {message}"):
        read_bbq([path])


def test_bbq_label_and_conditions_are_checked(tmp_path):
    row = json.loads((BBQ / "Age.jsonl").read_text().splitlines()[0])
    for change, message in (
        (dict(label=3), "label is 3"),
        (dict(context_condition="vague"), "context_condition 'vague'"),
        (dict(ans1=""), "non-empty"),
    ):
        path = tmp_path / "Age.jsonl"
        path.write_text(json.dumps({**row, **change}) + "\n")
        with pytest.raises(DatasetError, match=message):
            read_bbq([path])


def test_winogender_items_gotcha_and_biased_choice():
    data = read_winogender(WINOGENDER)
    assert data.name == "winogender" and len(data) == 24
    assert [n.split(" is not")[0] for n in data.notes] == ["all_sentences.tsv", "occupations-stats.tsv"]  # the fixtures are not the published files
    first = data.items[0]
    assert first.source_id == "baker.customer.0.male.txt" and first.choices == ("baker", "customer") and first.label == 0
    assert (first.pronoun, first.gender, first.category, first.polarity) == ("he", "male", "male", "occupation")
    # baker: 62.5% women (majority female); plumber: 1.5% (majority male)
    assert first.biased == (1,) and first.gotcha and first.condition == "gotcha"
    female = next(it for it in data.items if it.source_id == "baker.customer.0.female.txt")
    assert female.biased == (0,) and not female.gotcha and female.condition == "other"
    neutral = next(it for it in data.items if it.source_id == "plumber.someone.1.neutral.txt")
    assert neutral.biased == () and not neutral.gotcha and neutral.condition == "neutral" and neutral.pronoun == "they"
    assert sum(it.gotcha for it in data.items) == 8  # one gender of every (occupation, answer, participant)
    assert [d[0] for d in data.dimensions] == ["category", "condition", "polarity"]


def test_winogender_files_are_checked(tmp_path):
    (tmp_path / "all_sentences.tsv").write_text("sentid\tsentence\nbaker.customer.0.male.txt\tThe baker told the customer that she was late.\n")
    (tmp_path / "occupations-stats.tsv").write_text((WINOGENDER / "occupations-stats.tsv").read_text())
    with pytest.raises(DatasetError, match="0 male pronouns in the sentence"):
        read_winogender(tmp_path)
    (tmp_path / "occupations-stats.tsv").unlink()
    with pytest.raises(DatasetError, match="occupations-stats.tsv is missing"):
        read_winogender(tmp_path)


def test_names_subsets_and_paths(tmp_path, monkeypatch):
    monkeypatch.delenv("BIASLENS_DATA_DIR", raising=False)
    assert choice_dataset_name("BBQ_ambig") == "bbq-ambig" and choice_dataset_name("winogender-gotcha-male") == "winogender-gotcha-male"
    assert choice_dataset_name("crows-pairs") is None and "bbq-race-x-ses" in CHOICE_SUBSETS
    assert is_choice_path(BBQ) and is_choice_path(BBQ / "Age.jsonl") and is_choice_path(WINOGENDER) and not is_choice_path(tmp_path)
    age = load_choice_dataset("bbq-age", data_dir=FIXTURE_DATA, download=False)
    assert (age.name, len(age)) == ("bbq-age", 6) and all(it.category == "Age" for it in age.items)
    gotcha = load_choice_dataset("winogender-gotcha-female", data_dir=FIXTURE_DATA, download=False)
    assert len(gotcha) == 4 and all(it.gotcha and it.gender == "female" for it in gotcha.items) and gotcha.items[0].item_id == 0
    assert len(load_choice_dataset("bbq", data_dir=FIXTURE_DATA, download=False)) == 26
    (tmp_path / "data" / "bbq").mkdir(parents=True)
    (tmp_path / "data" / "bbq" / "Age.jsonl").write_bytes((BBQ / "Age.jsonl").read_bytes())
    with pytest.raises(
        DatasetNotFoundError,
        match=r"10 of its 11 files not found \(Disability_status.jsonl, Gender_identity.jsonl, .*switched off.*nyu-mll/BBQ/bea11bd",
    ):
        load_choice_dataset("bbq", data_dir=tmp_path / "data", cache_dir=tmp_path, download=False)
    assert len(load_choice_dataset("bbq-age", data_dir=tmp_path / "data", cache_dir=tmp_path, download=False)) == 6
    with pytest.raises(DatasetError, match="neither BBQ category files"):
        read_choice_path(tmp_path / "data")


def test_download_checks_the_git_blob_id_then_reads_the_file(tmp_path, monkeypatch):
    """A category downloads into the cache, checked against its git blob id at the pinned commit; a wrong one is removed."""
    monkeypatch.delenv("BIASLENS_DATA_DIR", raising=False)
    body = (BBQ / "Age.jsonl").read_bytes()
    blob = hashlib.sha1(b"blob %d\0" % len(body) + body).hexdigest()
    source = CHOICE_DATASETS["bbq"]
    age = next(f for f in source.files if f.file_name == "Age.jsonl")
    fixture_file = type(age)(age.file_name, age.url, blob, None)
    monkeypatch.setitem(CHOICE_DATASETS, "bbq", type(source)(**{**source.__dict__, "files": (fixture_file,)}))
    seen = []

    def serve(url, destination, progress):
        seen.append(url)
        destination.write_bytes(body)
        return hashlib.sha256(body).hexdigest()

    monkeypatch.setattr(datafiles, "fetch", serve)
    data = load_choice_dataset("bbq-age", cache_dir=tmp_path)
    assert len(data) == 6 and seen == [age.url] and (tmp_path / "datasets" / "bbq" / "Age.jsonl").read_bytes() == body
    assert datafiles.git_blob_id(tmp_path / "datasets" / "bbq" / "Age.jsonl") == blob
    monkeypatch.setitem(CHOICE_DATASETS, "bbq", type(source)(**{**source.__dict__, "files": (type(age)(age.file_name, age.url, "0" * 40, None),)}))
    with pytest.raises(DatasetError, match=r"has git blob id .* expected 000000000000…; it was removed"):
        load_choice_dataset("bbq-age", cache_dir=tmp_path / "other")
    assert not (tmp_path / "other" / "datasets" / "bbq" / "Age.jsonl").exists()


@shared
def test_the_shared_files():
    """The six shared categories (11,956 items, the published files) and the 720 Winogender sentences (240 gotcha)."""
    bbq = read_choice_path(DATA / "bbq")
    assert len(bbq) == 11956 and not any("not the published file" in n for n in bbq.notes)
    assert Counter(it.condition for it in bbq.items) == {"ambig": 5978, "disambig": 5978}
    assert all(len(it.biased) == 1 and it.unknown is not None for it in bbq.items)
    assert sum(CHOICE_DATASETS["bbq"].files[k].sha256 is not None for k in range(11)) == 6
    for f in CHOICE_DATASETS["bbq"].files:
        if f.sha256:
            assert hashlib.sha256((DATA / "bbq" / f.file_name).read_bytes()).hexdigest() == f.sha256
            assert datafiles.git_blob_id(DATA / "bbq" / f.file_name) == f.git_blob
    wino = read_choice_path(DATA / "winogender")
    assert len(wino) == 720 and wino.notes == ()
    assert Counter((it.gender, it.gotcha) for it in wino.items) == {
        ("male", True): 120,
        ("male", False): 120,
        ("female", True): 120,
        ("female", False): 120,
        ("neutral", False): 240,
    }
    for f in CHOICE_DATASETS["winogender"].files:
        assert datafiles.git_blob_id(DATA / "winogender" / f.file_name) == f.git_blob
