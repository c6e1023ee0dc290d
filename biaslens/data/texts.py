"""Texts to score, from a file: one per line (.txt), or a column of a CSV (.csv) or of JSON lines (.jsonl).

Read and checked before any model loads (`biaslens score`), each problem a one-line `DatasetError`
naming the file and the line: an empty line or cell, a control character such as NUL (through
`datafiles.read_text`), a text over `MAX_TEXT_CHARS` characters, an unknown column, a JSON line
that is not an object or whose value is not text. A model's own token limit is checked next, with
its tokenizer, still before the model loads (`biaslens.engine.text_scores.check_token_lengths`).
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass
from pathlib import Path

from biaslens.data.datafiles import read_text
from biaslens.errors import DatasetError

#: The file kinds `read_texts` reads, by suffix.
TEXT_FORMATS = (".txt", ".csv", ".jsonl")
#: The column (CSV) or key (JSON lines) read when none is named.
DEFAULT_COLUMN = "text"
#: The longest text read, in characters (far beyond any model's token limit: a safeguard, not the limit).
MAX_TEXT_CHARS = 100_000


@dataclass(frozen=True)
class TextFile:
    """The texts of a file, in order, with the line each is on (for messages) and what was read."""

    path: str
    texts: tuple[str, ...]
    lines: tuple[int, ...]
    column: str | None
    sha256: str

    def where(self, k: int) -> str:
        """Where text `k` is, for a message: "line 3"."""
        return f"line {self.lines[k]}"


def text_format(path: str | Path) -> str:
    """The suffix of a texts file, checked (`TEXT_FORMATS`)."""
    suffix = Path(path).suffix.lower()
    if suffix not in TEXT_FORMATS:
        raise DatasetError(f"unknown kind of file {suffix or '(no suffix)'!r}: give a .txt (one text per line), .csv or .jsonl file", path=str(path))
    return suffix


def read_texts(path: str | Path, column: str | None = None) -> TextFile:
    """The texts of `path` (module docstring); `column` names the CSV column or JSON key (default `DEFAULT_COLUMN`)."""
    kind = text_format(path)
    if kind == ".txt" and column is not None:
        raise DatasetError("a .txt file holds one text per line and no columns: leave --column out", path=str(path))
    text, sha = read_text(path)
    name = column or DEFAULT_COLUMN
    if kind == ".txt":
        texts, lines = _lines(text, str(path))
        name = None
    elif kind == ".csv":
        texts, lines = _csv(text, name, str(path))
    else:
        texts, lines = _jsonl(text, name, str(path))
    if not texts:
        raise DatasetError("the file holds no texts", path=str(path))
    for t, line in zip(texts, lines):
        if len(t) > MAX_TEXT_CHARS:
            raise DatasetError(
                f"line {line} is {len(t):,} characters long; biaslens reads texts of up to {MAX_TEXT_CHARS:,} characters "
                "(and the model's own token limit applies): split it",
                path=str(path),
            )
    return TextFile(str(path), tuple(texts), tuple(lines), name, sha)


def _lines(text: str, path: str) -> tuple[list[str], list[int]]:
    texts, lines = [], []
    for number, line in enumerate(text.split("\n"), start=1):
        line = line.removesuffix("\r")
        if not line.strip():
            if number == text.count("\n") + 1 and not line:  # the end of the last line: not a line of its own
                continue
            raise DatasetError(f"line {number} is empty: one text per line, no empty lines", path=path)
        texts.append(line)
        lines.append(number)
    return texts, lines


def _csv(text: str, column: str, path: str) -> tuple[list[str], list[int]]:
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader)
    except (StopIteration, csv.Error) as exc:
        raise DatasetError(f"not a CSV file ({exc or 'no header'})", path=path) from None
    header = [h.strip() for h in header]
    if column not in header:
        shown = ", ".join(repr(h) for h in header[:12]) + (" …" if len(header) > 12 else "")
        raise DatasetError(f"has no column {column!r} (its columns: {shown}): name the one holding the texts with --column", path=path)
    at = header.index(column)
    texts, lines = [], []
    try:
        for row in reader:
            line = reader.line_num
            if not any(cell.strip() for cell in row):
                raise DatasetError(f"line {line} is empty: remove empty lines", path=path)
            if at >= len(row) or not row[at].strip():
                raise DatasetError(f"line {line} has no text in column {column!r}", path=path)
            texts.append(row[at])
            lines.append(line)
    except csv.Error as exc:
        raise DatasetError(f"not a valid CSV file at line {reader.line_num}: {exc}", path=path) from None
    return texts, lines


def _jsonl(text: str, key: str, path: str) -> tuple[list[str], list[int]]:
    texts, lines = [], []
    raw = text.split("\n")
    for number, line in enumerate(raw, start=1):
        if not line.strip():
            if number == len(raw) and not line:
                continue
            raise DatasetError(f"line {number} is empty: one JSON object per line, no empty lines", path=path)
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DatasetError(f"line {number} is not JSON ({exc.msg})", path=path) from None
        if not isinstance(value, dict):
            raise DatasetError(f"line {number} is not a JSON object", path=path)
        if key not in value:
            shown = ", ".join(repr(k) for k in list(value)[:12])
            raise DatasetError(f"line {number} has no {key!r} key (its keys: {shown}): name the one holding the texts with --column", path=path)
        if not isinstance(value[key], str):
            raise DatasetError(f"line {number}: {key!r} is not text ({type(value[key]).__name__})", path=path)
        if not value[key].strip():
            raise DatasetError(f"line {number}: {key!r} is empty", path=path)
        texts.append(value[key])
        lines.append(number)
    return texts, lines


__all__ = ["DEFAULT_COLUMN", "MAX_TEXT_CHARS", "TEXT_FORMATS", "TextFile", "read_texts", "text_format"]
