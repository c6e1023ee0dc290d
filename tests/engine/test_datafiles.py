"""biaslens.data.datafiles: one place that finds, downloads and verifies data files (datasets, WEAT, flag lists)."""

from __future__ import annotations

import hashlib
import urllib.error

import pytest

from biaslens.data import datafiles, flags
from biaslens.errors import DatasetError, DatasetNotFoundError


def test_locate_searches_the_data_folder_recursively_then_the_cache(tmp_path, monkeypatch):
    monkeypatch.delenv("BIASLENS_DATA_DIR", raising=False)
    data, cache = tmp_path / "data", tmp_path / "cache"
    (data / "b" / "deep").mkdir(parents=True)
    (data / "a").mkdir()
    (data / "b" / "deep" / "x.csv").write_text("one")
    (data / "a" / "x.csv").write_text("two")
    assert datafiles.locate("thing", ["x.csv"], data_dir=data, cache_dir=cache) == data / "a" / "x.csv"  # sorted: a/ before b/
    assert datafiles.locate("thing", ["y.csv", "x.csv"], data_dir=data, cache_dir=cache) == data / "a" / "x.csv"
    only_deep = lambda path, name: path.parent.name == "deep"
    assert datafiles.locate("thing", ["x.csv"], data_dir=data, cache_dir=cache, accept=only_deep) == data / "b" / "deep" / "x.csv"
    assert datafiles.locate("thing", ["z.csv"], data_dir=data, cache_dir=cache) is None
    cached = datafiles.cache_folder("thing", cache) / "z.csv"
    assert cached == cache / "datasets" / "thing" / "z.csv"
    cached.parent.mkdir(parents=True)
    cached.write_text("three")
    assert datafiles.locate("thing", ["z.csv"], data_dir=data, cache_dir=cache) == cached
    monkeypatch.setenv("BIASLENS_DATA_DIR", str(data))
    assert datafiles.data_folder() == data and datafiles.locate("thing", ["x.csv"], cache_dir=cache) == data / "a" / "x.csv"
    with pytest.raises(DatasetError, match="is not a folder"):
        datafiles.data_folder(tmp_path / "missing")


def test_read_text_gives_text_and_checksum_and_refuses_empty_or_non_utf8(tmp_path):
    path = tmp_path / "f.csv"
    path.write_bytes(b"\xef\xbb\xbfa,b\n")
    assert datafiles.read_text(path) == ("a,b\n", hashlib.sha256(b"\xef\xbb\xbfa,b\n").hexdigest())
    path.write_bytes(b"a\xff")
    with pytest.raises(DatasetError, match="not UTF-8 text: byte 0xff at offset 1"):
        datafiles.read_text(path)
    path.write_bytes(b"  \n")
    with pytest.raises(DatasetError, match="the file is empty"):
        datafiles.read_text(path)


def _serving(body: bytes):
    def fake_fetch(url, destination, progress):
        destination.write_bytes(body)
        return hashlib.sha256(body).hexdigest()

    return fake_fetch


def test_download_verifies_checks_and_leaves_nothing_on_failure(tmp_path, monkeypatch):
    target = tmp_path / "cache" / "f.txt"
    why = lambda reason: f"f.txt not found and {reason}"
    monkeypatch.setattr(datafiles, "fetch", _serving(b"good"))
    with pytest.raises(DatasetError, match=r"the downloaded f.txt has sha256 .*it was removed"):
        datafiles.download("http://x/f.txt", target, sha256="0" * 64, not_found=why)
    assert list(target.parent.iterdir()) == []

    def refuse(path):
        raise DatasetError("no header", path=str(path))

    with pytest.raises(DatasetError, match=r"the downloaded f.txt cannot be read \(.*no header\)"):
        datafiles.download("http://x/f.txt", target, sha256=None, not_found=why, check=refuse)
    assert list(target.parent.iterdir()) == []

    def offline(url, destination, progress):
        raise urllib.error.URLError("no route to host")

    monkeypatch.setattr(datafiles, "fetch", offline)
    with pytest.raises(DatasetNotFoundError, match=r"^f.txt not found and could not be downloaded \(no route to host\)$"):
        datafiles.download("http://x/f.txt", target, sha256=None, not_found=why)
    assert list(target.parent.iterdir()) == []

    monkeypatch.setattr(datafiles, "fetch", _serving(b"good"))
    checked = []
    got = datafiles.download("http://x/f.txt", target, sha256=hashlib.sha256(b"good").hexdigest(), not_found=why, check=checked.append)
    assert got == target and target.read_bytes() == b"good" and len(checked) == 1 and checked[0] != target
    assert [p.name for p in target.parent.iterdir()] == ["f.txt"]


def test_flag_lists_use_the_same_flow(tmp_path, monkeypatch):
    """A published flag list: None offline, a wrong checksum refused, a right one cached and read."""
    monkeypatch.delenv("BIASLENS_DATA_DIR", raising=False)
    body = b"id\tsent\n12\tA b.\nfr_FR6\tC d.\n"

    def offline(url, destination, progress):
        raise urllib.error.URLError("no network")

    monkeypatch.setattr(datafiles, "fetch", offline)
    assert flags.load_flag_list("non-minimal-en", cache_dir=tmp_path) is None
    assert flags.load_flag_list("non-minimal-en", cache_dir=tmp_path, download=False) is None
    monkeypatch.setattr(datafiles, "fetch", _serving(body))
    with pytest.raises(DatasetError, match="sha256"):
        flags.load_flag_list("non-minimal-en", cache_dir=tmp_path)
    source = flags.FLAG_LISTS["non-minimal-en"]
    import dataclasses

    monkeypatch.setitem(flags.FLAG_LISTS, "non-minimal-en", dataclasses.replace(source, sha256=hashlib.sha256(body).hexdigest()))
    got = flags.load_flag_list("non-minimal-en", cache_dir=tmp_path)
    assert got.ids == frozenset({12}) and got.other_ids == ("fr_FR6",)
    assert got.path == tmp_path / "datasets" / "non-minimal-en" / source.file_name
    monkeypatch.setattr(datafiles, "fetch", offline)
    assert flags.load_flag_list("non-minimal-en", cache_dir=tmp_path).ids == frozenset({12})  # from the cache now
