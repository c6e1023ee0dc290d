"""The fingerprint of a local model folder: sha256 over the names and contents of its files.

Hashing a large model takes seconds, so each file's digest is remembered in the cache folder (`fingerprints.json`) under
what identifies one version of a file without reading it: its path, size, modification time, *change time* (ctime) and
inode. The modification time can be set back by any program (`touch -d`, `os.utime`, `cp -p`); the change time cannot: the
kernel sets it to now whenever a file's content or metadata changes (setting the modification time back included), and a
file copied or moved over another is another inode. So weights replaced by another model's of the same size, their old
modification time restored, are hashed again, and their fingerprint (and every cached score keyed by it) changes.

What the memo trusts: that a file whose path, size, both times and inode are unchanged has unchanged content. Only a
change to the system clock or a raw write to the disk under the filesystem could break that.
`models.py` re-exports `folder_fingerprint`.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import threading
from pathlib import Path
from typing import Any

from biaslens.paths import default_cache_dir

#: The memo's file in the cache folder.
MEMO_FILE = "fingerprints.json"


def memo_key(path: Path, stat: os.stat_result) -> str:
    """What identifies one version of a file without reading it (see the module's docstring)."""
    return f"{path}|{stat.st_size}|{stat.st_mtime_ns}|{stat.st_ctime_ns}|{stat.st_ino}"


def folder_fingerprint(folder: Path) -> str:
    """sha256 over the names and contents of a model folder's files (hidden files left out).

    Digests are remembered per `memo_key` in the cache folder; any change to a file's content changes the fingerprint.
    """
    folder = folder.resolve()
    memo_path = default_cache_dir() / MEMO_FILE
    memo = _read_json(memo_path)
    digest = hashlib.sha256()
    changed = False
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and not p.name.startswith(".")):
        key = memo_key(path, path.stat())
        file_hash = memo.get(key)
        if not isinstance(file_hash, str):
            file_hash = sha256_file(path)
            memo[key] = file_hash
            changed = True
        digest.update(f"{path.relative_to(folder)}\0{file_hash}\0".encode())
    if changed:
        _write_json_quietly(memo_path, memo)
    return "sha256:" + digest.hexdigest()


def folder_version(folder: Path) -> tuple[str, ...]:
    """What identifies the present contents of a model folder without reading a file: each file's `memo_key` (the files
    `folder_fingerprint` hashes). A file written, replaced, added or removed changes it; () for a folder that cannot be
    listed. The app's model pool keys a folder's model by it, so a folder changed in place is loaded afresh."""
    try:
        folder = folder.resolve()
        return tuple(sorted(memo_key(p, p.stat()) for p in folder.rglob("*") if p.is_file() and not p.name.startswith(".")))
    except (OSError, RuntimeError, ValueError):
        return ()


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def _write_json_quietly(path: Path, data: dict[str, Any]) -> None:
    """Best effort: a read-only cache folder only costs re-hashing next time."""
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")
        tmp.write_text(json.dumps(data))
        os.replace(tmp, path)


__all__ = ["MEMO_FILE", "folder_fingerprint", "memo_key", "sha256_file"]
