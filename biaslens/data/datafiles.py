"""Data files on this machine: found in a data folder or the cache, else downloaded and verified.

Every reader of public data (benchmark datasets, WEAT stimuli, published flag lists) goes
through here, in the same order:

1. `data_folder(data_dir)`: the folder the user named (`data_dir`, else $BIASLENS_DATA_DIR),
   searched recursively (`find_file`);
2. `cache_folder(name, cache_dir)`: `<cache>/datasets/<name>` (`<cache>` is `cache_dir`,
   else `paths.default_cache_dir()`);
3. `download(url, target, sha256=...)`: streamed into a hidden `.part` file beside
   `target`, checked against its sha256 and by the caller's reader, and only then renamed
   into place; nothing is left behind on failure.

`locate` runs steps 1-2; `read_text` reads a file as UTF-8 text with the sha256 of its
bytes. Every file is read through `read_bytes`, which applies the one rule of `check_data_file`
before reading anything: in the app, inside the server's allowed folders (links followed;
`serving.ServerSettings.in_effect`), then a regular file (no folder, FIFO, device or socket),
at most `MAX_FILE_MB`, readable. Problems are one-line
`DatasetError` / `DatasetNotFoundError` messages.
"""

from __future__ import annotations

import codecs
import hashlib
import http.client
import os
import stat
import tempfile
import urllib.request
from pathlib import Path
from typing import Callable, Sequence, TypedDict

from biaslens.errors import DatasetError, DatasetNotFoundError
from biaslens.paths import default_cache_dir
from biaslens.data.sentences import control_character, describe_control
from biaslens.data.confine import confine_data_file

#: Download progress callback: (bytes done, total bytes or None when unknown).
Progress = Callable[[int, int | None], None]


class LoadOptions(TypedDict, total=False):
    """Where a dataset loader looks and whether it may download (`datasets.load_dataset`'s keyword arguments)."""

    data_dir: str | Path | None
    cache_dir: str | Path | None
    download: bool
    progress: Progress | None


#: Seconds a download waits for the server before giving up.
DOWNLOAD_TIMEOUT_S = 10.0
#: The largest data file read (a dataset, WEAT stimuli, a flag or attribute list), in MB, refused before it is read.
#: The public datasets are at most 1.4 MB; the app's own limit (BIASLENS_MAX_UPLOAD_MB, default 50) applies first there.
MAX_FILE_MB = 100


def _not_regular(mode: int) -> str | None:
    """What a file that is not a regular file is ("a folder", "a FIFO (named pipe)", ...), or None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    for test, kind in (
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISFIFO, "a FIFO (named pipe)"),
        (stat.S_ISCHR, "a device"),
        (stat.S_ISBLK, "a device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return kind
    return "not a file"


#: What `check_data_file` asks for when a path is not a regular file.
DATA_FILE = "a data file (.csv, .json, .jsonl or .txt)"


def check_data_file(path: str | Path, *, what: str = DATA_FILE) -> os.stat_result:
    """The one rule for every file read on a user's behalf (a dataset, WEAT stimuli, a flag, attribute, template or target
    list), checked before a byte is read, each a one-line `DatasetError` naming the file:

    inside the allowed folders of the server settings in effect (the app; links followed), present, a regular file (not a
    folder, FIFO, device or socket: reading a FIFO waits forever, /dev/zero never ends), at most `MAX_FILE_MB`, readable.
    `what` names the file expected, for the message about one that is not a regular file. Returns the file's `os.stat`
    (links followed)."""
    path = Path(path)
    confine_data_file(path)
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise DatasetError("no such file", path=str(path)) from None
    except (OSError, ValueError) as exc:  # a name too long, a NUL, a loop of links
        raise DatasetError(f"cannot read the file ({getattr(exc, 'strerror', None) or exc})", path=str(path)) from exc
    kind = _not_regular(info.st_mode)
    if kind is not None:
        raise DatasetError(f"it is {kind}, not a regular file: name {what}", path=str(path))
    limit = MAX_FILE_MB * 1_000_000
    if info.st_size > limit:
        raise DatasetError(
            f"the file is {info.st_size / 1e6:,.1f} MB; biaslens reads data files up to {MAX_FILE_MB:,} MB: split it or use a sample", path=str(path)
        )
    if not os.access(path, os.R_OK):
        raise DatasetError("the file is not readable (permission denied): change its permissions or copy it", path=str(path))
    return info


def read_bytes(path: str | Path, *, what: str = DATA_FILE) -> bytes:
    """A data file's bytes, read on a user's behalf, after `check_data_file` (the one rule: allowed folders, a regular
    file, its size, readable). Opened without waiting (a file swapped for a FIFO after the check is refused, not waited on)."""
    path = Path(path)
    check_data_file(path, what=what)
    limit = MAX_FILE_MB * 1_000_000
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(fd, "rb") as handle:
            info = os.fstat(handle.fileno())
            kind = _not_regular(info.st_mode)
            if kind is not None:
                raise DatasetError(f"it is {kind}, not a regular file: name {what}", path=str(path))
            size = info.st_size
            raw = handle.read(limit + 1) if size <= limit else b""
    except OSError as exc:
        raise DatasetError(f"cannot read the file ({exc.strerror or exc})", path=str(path)) from exc
    if size > limit or len(raw) > limit:  # (a file that grew while read)
        shown = f"{size / 1e6:,.1f} MB" if size > limit else f"over {MAX_FILE_MB:,} MB"
        raise DatasetError(f"the file is {shown}; biaslens reads data files up to {MAX_FILE_MB:,} MB: split it or use a sample", path=str(path))
    return raw


def read_text(path: str | Path) -> tuple[str, str]:
    """The file's text (UTF-8, a BOM allowed) and the sha256 of its bytes (`read_bytes`).

    An empty or unreadable file, and one holding a control character (NUL, ...: never text), is a DatasetError.
    """
    path = Path(path)
    raw = read_bytes(path)
    body = raw.removeprefix(codecs.BOM_UTF8)
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        offset = exc.start + len(raw) - len(body)
        line = raw[:offset].count(b"\n") + 1
        raise DatasetError(
            f"not UTF-8 text: byte 0x{raw[offset]:02x} at offset {offset} (line {line}); save the file as UTF-8", path=str(path)
        ) from exc
    if not text.strip():
        raise DatasetError("the file is empty", path=str(path))
    at = control_character(text)
    if at is not None:
        line = text.count("\n", 0, at) + 1
        raise DatasetError(f"line {line} contains the control character {describe_control(text[at])}, which no text holds: remove it", path=str(path))
    return text, hashlib.sha256(raw).hexdigest()


def cache_folder(name: str, cache_dir: str | Path | None = None) -> Path:
    """Where downloads of `name` ("crows-pairs", "weat", ...) are kept: `<cache>/datasets/<name>`."""
    return (Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir()) / "datasets" / name


def data_folder(data_dir: str | Path | None = None) -> Path | None:
    """The folder the user named (argument, else $BIASLENS_DATA_DIR), or None; a named folder must exist."""
    if data_dir is not None:
        folder, origin = Path(os.path.expanduser(data_dir)), "data folder"
    elif os.environ.get("BIASLENS_DATA_DIR"):
        folder, origin = Path(os.path.expanduser(os.environ["BIASLENS_DATA_DIR"])), "BIASLENS_DATA_DIR"
    else:
        return None
    if not os.path.isdir(folder):  # (os.path: a name too long for a path is no folder, never an OSError)
        raise DatasetError(f"{origin} {folder} is not a folder")
    return folder


def find_file(folder: Path, file_names: Sequence[str], *, accept: Callable[[Path, str], bool] | None = None) -> Path | None:
    """The first file under `folder` (recursively, sorted) named like one of `file_names`, earlier names first.

    `accept(candidate, file_name)`, when given, may turn a candidate down (a bare "test.jsonl" could be anything).
    """
    for file_name in file_names:
        for candidate in sorted(folder.rglob(file_name)):
            if candidate.is_file() and (accept is None or accept(candidate, file_name)):
                return candidate
    return None


def locate(
    name: str,
    file_names: Sequence[str],
    *,
    data_dir: str | Path | None = None,
    cache_dir: str | Path | None = None,
    accept: Callable[[Path, str], bool] | None = None,
) -> Path | None:
    """Where a file is on this machine: under the data folder (recursively), else in `name`'s cache folder; or None."""
    for folder in (data_folder(data_dir), cache_folder(name, cache_dir)):
        if folder is not None and folder.is_dir():
            found = find_file(folder, file_names, accept=accept)
            if found is not None:
                return found
    return None


def fetch(url: str, destination: Path, progress: Progress | None = None) -> str:
    """Stream `url` into `destination`; the sha256 of the bytes written. Network problems raise OSError."""
    digest = hashlib.sha256()
    with urllib.request.urlopen(url, timeout=DOWNLOAD_TIMEOUT_S) as response, destination.open("wb") as out:
        length = response.headers.get("Content-Length")
        total = int(length) if length and length.isdigit() else None
        done = 0
        if progress is not None:
            progress(done, total)
        while block := response.read(1 << 16):
            out.write(block)
            digest.update(block)
            done += len(block)
            if progress is not None:
                progress(done, total)
    if total is not None and done != total:
        raise ConnectionError(f"the connection closed after {done:,} of {total:,} bytes")
    return digest.hexdigest()


def download(
    url: str,
    target: Path,
    *,
    sha256: str | None,
    git_blob: str | None = None,
    not_found: Callable[[str], str],
    check: Callable[[Path], object] | None = None,
    progress: Progress | None = None,
) -> Path:
    """Download `url` to `target`, which appears only once complete, verified and readable; returns `target`.

    `sha256`: the published checksum (None: none published); `git_blob`: the file's git blob id in its repository at a
    pinned commit (a checksum every GitHub file has: sha1 of "blob <size>\\0" and the bytes). `check(path)` reads the
    downloaded file and raises DatasetError when it is unusable. `not_found(why)` words
    the one-line DatasetNotFoundError raised when the file cannot be had ("could not be
    downloaded (...)", "cannot be saved (...)"). A wrong checksum or an unreadable file is
    a DatasetError; the partial file is removed in every case.
    """
    folder = target.parent
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(dir=folder, prefix=f".{target.name}.", suffix=".part")
        os.close(fd)
    except OSError as exc:
        raise DatasetNotFoundError(not_found(f"cannot be saved ({folder}: {exc.strerror or exc})")) from exc
    tmp = Path(tmp_name)
    try:
        try:
            digest = fetch(url, tmp, progress)
        except (OSError, http.client.HTTPException) as exc:  # URLError, timeouts and refused connections are OSErrors
            reason = " ".join(str(getattr(exc, "reason", None) or exc).split())
            raise DatasetNotFoundError(not_found(f"could not be downloaded ({reason})")) from exc
        retry = f"it was removed. Try again later, or download it by hand from {url} and put it in {folder}/."
        if sha256 and digest != sha256:
            raise DatasetError(f"the downloaded {target.name} has sha256 {digest[:12]}…, expected {sha256[:12]}…; {retry}")
        blob = git_blob_id(tmp) if git_blob else None
        if git_blob and blob != git_blob:
            raise DatasetError(f"the downloaded {target.name} has git blob id {str(blob)[:12]}…, expected {git_blob[:12]}…; {retry}")
        if check is not None:
            try:
                check(tmp)
            except DatasetError as exc:
                raise DatasetError(f"the downloaded {target.name} cannot be read ({exc}); {retry}") from exc
        try:
            os.replace(tmp, target)
        except OSError as exc:
            raise DatasetNotFoundError(not_found(f"cannot be saved ({target}: {exc.strerror or exc})")) from exc
    finally:
        tmp.unlink(missing_ok=True)
    return target


def git_blob_id(path: Path) -> str:
    """The git blob id of a file: sha1 of "blob <size>\\0" followed by its bytes (what `git hash-object` prints)."""
    digest = hashlib.sha1(f"blob {path.stat().st_size}\0".encode(), usedforsecurity=False)
    with path.open("rb") as handle:
        while block := handle.read(1 << 16):
            digest.update(block)
    return digest.hexdigest()


__all__ = [
    "DOWNLOAD_TIMEOUT_S",
    "MAX_FILE_MB",
    "Progress",
    "cache_folder",
    "check_data_file",
    "data_folder",
    "download",
    "fetch",
    "find_file",
    "git_blob_id",
    "locate",
    "read_bytes",
    "read_text",
]
