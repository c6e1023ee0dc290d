"""Writing results for people: CSV that spreadsheets open safely, JSON without NaN, atomic files.

A cell that starts with `=`, `+`, `-`, `@` (or a tab / carriage return) is run as a
formula by spreadsheet programs ("CSV injection"). Text cells that start so get a
leading apostrophe, which spreadsheets show as plain text; numbers are never touched.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

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


def atomic_write(path: str | Path, text: str) -> Path:
    """Write a text file so that readers see either the old or the new file, never half of one."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


__all__ = ["atomic_write", "json_safe", "neutralize_cell", "safe_csv", "to_json"]
