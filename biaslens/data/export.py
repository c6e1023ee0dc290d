"""Writing results for people: CSV that spreadsheets open safely, JSON without NaN, atomic files.

A cell that starts with `=`, `+`, `-`, `@` (or a tab / carriage return) is run as a
formula by spreadsheet programs ("CSV injection"). Text cells that start so get a
leading apostrophe, which spreadsheets show as plain text; numbers are never touched.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from biaslens.errors import OutputError

_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def neutralize_cell(value: Any) -> Any:
    """Prefix text that a spreadsheet would read as a formula with an apostrophe."""
    if isinstance(value, str) and value.startswith(_FORMULA_STARTS):
        return "'" + value
    return value


def safe_csv(frame: pd.DataFrame) -> str:
    """The frame as CSV text, text cells neutralised, floats at full precision."""
    text_columns = [c for c in frame.columns if frame[c].dtype == object or pd.api.types.is_string_dtype(frame[c])]
    safe = frame.copy()
    for column in text_columns:
        safe[column] = safe[column].map(neutralize_cell)
    return safe.to_csv(index=False)


def json_safe(value: Any) -> Any:
    """NaN and infinities are not JSON: write them as null; numpy scalars as Python numbers."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value


def to_json(value: Any) -> str:
    return json.dumps(json_safe(value), indent=2, ensure_ascii=False) + "\n"


def _reason(exc: OSError) -> str:
    return exc.strerror or str(exc) or type(exc).__name__


def current_umask() -> int:
    """The process's file-creation mask (read from /proc where possible: setting it is not thread-safe)."""
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def check_output_dir(path: str | Path, *, option: str = "--out") -> Path:
    """Refuse, before any work, an output folder that cannot be written; `OutputError` says why in one line.

    The folder need not exist (it is created when the results are written), but then its
    nearest existing parent must be a folder in which one can be created. An empty name (which
    would mean the current folder, its files overwritten) is refused. Nothing is left behind.
    """
    if not str(path).strip():
        raise OutputError(f"{option} is empty: name an output folder (it is created if missing).")
    out = Path(os.path.expanduser(str(path)))
    try:
        os.stat(out)
    except (FileNotFoundError, NotADirectoryError):
        pass  # to be created (a file on the way is refused below)
    except (OSError, ValueError) as exc:  # a name too long, a loop of links, a NUL, ...
        reason = _reason(exc) if isinstance(exc, OSError) else "a NUL character"
        raise OutputError(f"{option} {out} cannot be used ({reason}): choose another folder.") from None
    if out.exists() and not out.is_dir():
        raise OutputError(f"{option} {out} is a file, not a folder: name a folder (it is created if missing).")
    probe_in = out
    while not probe_in.exists():
        if probe_in.parent == probe_in:
            break
        probe_in = probe_in.parent
    if probe_in.exists() and not probe_in.is_dir():
        raise OutputError(f"{option} {out} cannot be created: {probe_in} is a file, not a folder.")
    try:
        os.rmdir(tempfile.mkdtemp(dir=probe_in, prefix=".biaslens-probe-"))
    except OSError as exc:
        raise OutputError(f"{option} {out} cannot be written ({_reason(exc)} in {probe_in}): choose a folder you can write to.") from None
    return out


def atomic_write(path: str | Path, text: str | bytes) -> Path:
    """Write a text file (or `bytes`: a binary one) so that readers see either the old or the new file, never half of one.

    The file gets the usual permissions (0666 less the umask), not the private 0600 of a
    temporary file. A failure (read-only folder, disk full) raises `OutputError` naming the file.
    """
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as exc:
        raise OutputError(f"cannot write {path} ({_reason(exc)}).") from None
    try:
        if isinstance(text, bytes):
            with os.fdopen(fd, "wb") as binary:
                binary.write(text)
        else:
            with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
                handle.write(text)
        os.chmod(tmp, 0o666 & ~current_umask())
        os.replace(tmp, path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise OutputError(f"cannot write {path} ({_reason(exc)}).") from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


__all__ = ["atomic_write", "check_output_dir", "current_umask", "json_safe", "neutralize_cell", "safe_csv", "to_json"]
