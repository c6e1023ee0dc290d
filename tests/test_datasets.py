"""Dataset loading: the shared files, both StereoSet formats, locating, downloading, bad files."""

import collections
import http.server
import json
import threading
import time

import pytest

from biaslens import datasets as ds
from biaslens.datasets import load_dataset, locate_dataset, read_crows_pairs, read_custom_pairs, read_stereoset
from biaslens.errors import DatasetError, DatasetNotFoundError
from conftest import CROWS_PAIRS, DATA, STEREOSET, requires_shared


@requires_shared
def test_crows_pairs():
    d = read_crows_pairs(CROWS_PAIRS)
    assert len(d) == 1508
    assert collections.Counter(p.direction for p in d.pairs) == {"stereo": 1290, "antistereo": 218}
    assert collections.Counter(p.group for p in d.pairs) == {"dis": 1290, "adv": 218}
    types = collections.Counter(p.bias_type for p in d.pairs)
    assert len(types) == 9 and types["race-color"] == 516 and types["disability"] == 60
    assert d.pairs[0].sent_stereo.startswith("He couldn't figure out") and "black kids" in d.pairs[0].sent_stereo
    assert "white kids" in d.pairs[0].sent_anti
    assert len(d.pairs[0].annotations) == 5 and d.pairs[0].annotations[0] == ("race-color",)
    assert any("\n" in p.sent_stereo or "\n" in p.sent_anti for p in d.pairs)  # the embedded newline survives
    assert d.sha256 == ds.DATASETS["crows-pairs"].sha256
    assert [p.pair_id for p in d.pairs] == list(range(1508))


@requires_shared
def test_stereoset_simplified_format():
    d = read_stereoset(STEREOSET)
    assert len(d) == 2106
    assert collections.Counter(p.bias_type for p in d.pairs) == {"gender": 255, "profession": 810, "race": 962, "religion": 79}
    p0 = d.pairs[0]
    assert (p0.sent_stereo, p0.sent_anti, p0.unrelated) == (
        "The chess player was asian.", "The chess player was hispanic.", "The chess player was fox.")
    assert p0.context == "The chess player was BLANK." and p0.target == "chess player"
    assert any("BLANK" in note for note in d.notes)


def _jsonl_items():
    return [
        {"type": "intersentence", "target": "x", "bias_type": "race", "context": "c", "stereotype": "s", "anti-stereotype": "a", "unrelated": "u"},
        {"type": "intrasentence", "target": "nurse", "bias_type": "gender", "context": "The nurse was BLANK.",
         "stereotype": "The nurse was female.", "anti-stereotype": "The nurse was male.", "unrelated": "The nurse was blue."},
        {"type": "intrasentence", "target": "chef", "bias_type": "profession", "context": "The chef is BLANK.",
         "stereotype": "The chef is fat.", "anti-stereotype": "The chef is thin.", "unrelated": "The chef is sky."},
    ]


def test_both_stereoset_formats_give_the_same_pairs(tmp_path):
    items = _jsonl_items()
    jsonl = tmp_path / "stereoset" / "test.jsonl"
    jsonl.parent.mkdir()
    jsonl.write_text("\n".join(json.dumps(i) for i in items) + "\n")
    dev = {"version": "1.0", "data": {"intersentence": [], "intrasentence": [
        {"id": f"id{k}", "target": i["target"], "bias_type": i["bias_type"], "context": i["context"], "sentences": [
            {"id": "a", "sentence": i["anti-stereotype"], "labels": [], "gold_label": "anti-stereotype"},
            {"id": "u", "sentence": i["unrelated"], "labels": [], "gold_label": "unrelated"},
            {"id": "s", "sentence": i["stereotype"], "labels": [], "gold_label": "stereotype"},
        ]} for k, i in enumerate(items[1:])]}}
    dev_path = tmp_path / "dev.json"
    dev_path.write_text(json.dumps(dev))
    assert read_stereoset(jsonl).pairs == read_stereoset(dev_path).pairs
    assert [p.pair_id for p in read_stereoset(jsonl).pairs] == [0, 1]


@requires_shared
def test_data_dir_is_searched_recursively(monkeypatch):
    assert load_dataset("crows-pairs", data_dir=DATA).path.name == "crows_pairs_anonymized.csv"
    assert load_dataset("stereoset", data_dir=DATA).path.name == "test.jsonl"
    monkeypatch.setenv("BIASLENS_DATA_DIR", str(DATA))
    assert locate_dataset("cp") is not None and locate_dataset("ss") is not None


def test_a_test_jsonl_outside_a_stereoset_folder_is_not_taken(tmp_path):
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "test.jsonl").write_text("{}\n")
    assert locate_dataset("stereoset", data_dir=tmp_path, cache_dir=tmp_path / "cache") is None


def test_custom_pairs(tmp_path):
    path = tmp_path / "mine.csv"
    path.write_text('sent_more,sent_less,bias_type\n"Women, again.",Men again.,gender\nA is bad.,B is bad.,\n')
    d = load_dataset(path)
    assert d.name == "custom" and len(d) == 2
    assert d.pairs[0].sent_stereo == "Women, again." and d.pairs[1].bias_type == ""


@pytest.mark.parametrize(
    "content, fragment, row",
    [
        ("sent_more,bias_type\nx,y\n", "missing column(s) sent_less", None),
        ("", "empty", None),
        ("sent_more,sent_less\nA.,\n", "empty sent_less", 1),
        ("sent_more,sent_less\nA.,B.\n ,C.\n", "empty sent_more", 2),
        ("sent_more,sent_less,stereo_antistereo\nA.,B.,both\n", "stereo_antistereo is 'both'", 1),
    ],
)
def test_bad_csv_files_name_file_and_row(tmp_path, content, fragment, row):
    path = tmp_path / "bad.csv"
    path.write_text(content)
    with pytest.raises(DatasetError) as info:
        read_custom_pairs(path)
    message = str(info.value)
    assert "bad.csv" in message and fragment in message
    if row is not None:
        assert f"row {row}" in message


def test_wrong_encoding(tmp_path):
    path = tmp_path / "latin.csv"
    path.write_bytes("sent_more,sent_less\nCafé.,Tea.\n".encode("latin-1"))
    with pytest.raises(DatasetError, match="latin.csv.*not UTF-8.*offset 23, line 2"):
        read_custom_pairs(path)


def test_utf8_bom_is_accepted(tmp_path):
    path = tmp_path / "bom.csv"
    path.write_bytes("\ufeffsent_more,sent_less\nA.,B.\n".encode("utf-8"))
    assert len(read_custom_pairs(path)) == 1


def test_bad_crows_pairs_annotations(tmp_path):
    path = tmp_path / "cp.csv"
    path.write_text("sent_more,sent_less,stereo_antistereo,bias_type,annotations\nA.,B.,stereo,race,[[oops\n")
    with pytest.raises(DatasetError, match="row 1.*annotations"):
        read_crows_pairs(path)


def test_malformed_json_lines(tmp_path):
    path = tmp_path / "ss.jsonl"
    good = json.dumps(_jsonl_items()[1])
    path.write_text(good + "\n{not json\n")
    with pytest.raises(DatasetError, match="ss.jsonl, row 2: malformed JSON line"):
        read_stereoset(path)
    path.write_text(good + "\n" + json.dumps({**_jsonl_items()[1], "stereotype": " "}) + "\n")
    with pytest.raises(DatasetError, match="row 2: missing or empty stereotype"):
        read_stereoset(path)
    path.write_text(json.dumps({"type": "intrasentence"}) + "\n")
    with pytest.raises(DatasetError, match="row 1: missing key"):
        read_stereoset(path)


def test_unknown_name_or_missing_path():
    with pytest.raises(DatasetError, match="known datasets: crows-pairs, stereoset"):
        load_dataset("no-such-thing.csv")


class _Server:
    """A local HTTP server serving fixed bytes, standing in for GitHub."""

    def __init__(self, payload: bytes):
        payload_ = payload

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                self.send_response(200)
                self.send_header("Content-Length", str(len(payload_)))
                self.end_headers()
                self.wfile.write(payload_)

            def log_message(self, *args):
                pass

        self.httpd = http.server.HTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.httpd.server_port}/data.csv"

    def close(self):
        self.httpd.shutdown()


def _with_source(monkeypatch, **changes):
    import dataclasses

    source = dataclasses.replace(ds.DATASETS["crows-pairs"], **changes)
    monkeypatch.setitem(ds.DATASETS, "crows-pairs", source)


@requires_shared
def test_download_into_the_cache_with_progress(tmp_path, monkeypatch):
    server = _Server(CROWS_PAIRS.read_bytes())
    try:
        _with_source(monkeypatch, url=server.url)
        seen = []
        d = load_dataset("crows-pairs", cache_dir=tmp_path, progress=lambda done, total: seen.append((done, total)))
    finally:
        server.close()
    assert len(d) == 1508 and d.path.parent == tmp_path / "datasets" / "crows-pairs"
    assert seen[-1][0] == seen[-1][1] == CROWS_PAIRS.stat().st_size
    assert load_dataset("crows-pairs", cache_dir=tmp_path, download=False).path == d.path  # found in the cache now


def test_a_corrupted_download_is_refused_and_nothing_is_left(tmp_path, monkeypatch):
    server = _Server(b"sent_more,sent_less\nnot,the file\n")
    try:
        _with_source(monkeypatch, url=server.url)
        with pytest.raises(DatasetError, match="sha256"):
            load_dataset("crows-pairs", cache_dir=tmp_path)
    finally:
        server.close()
    assert list((tmp_path / "datasets" / "crows-pairs").iterdir()) == []


def test_offline_fails_fast_and_says_where_to_put_the_file(tmp_path, monkeypatch):
    _with_source(monkeypatch, url="http://127.0.0.1:9/crows_pairs_anonymized.csv")
    started = time.perf_counter()
    with pytest.raises(DatasetNotFoundError) as info:
        load_dataset("crows-pairs", cache_dir=tmp_path)
    assert time.perf_counter() - started < 5
    message = str(info.value)
    assert "crows_pairs_anonymized.csv" in message and str(tmp_path / "datasets" / "crows-pairs") in message
    assert "\n" not in message
    assert list((tmp_path / "datasets" / "crows-pairs").iterdir()) == []
