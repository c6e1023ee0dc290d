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
import re
import tempfile
from pathlib import Path
from typing import Any, Iterable, Sequence

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


def check_output_dir(path: str | Path, *, option: str = "--out", files: Iterable[str] = ()) -> Path:
    """Refuse, before any work, an output folder that cannot be written; `OutputError` says why in one line.

    The folder need not exist (it is created when the results are written), but then its
    nearest existing parent must be a folder in which one can be created. An empty name (which
    would mean the current folder, its files overwritten) is refused, and so is a folder where one
    of the `files` the command writes in it goes. Nothing is left behind.
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
    folder = next((out / name for name in files if (out / name).is_dir()), None)
    if folder is not None:
        raise OutputError(f"{option} {out} holds a folder named {folder.name}, where a file of the results goes: move it, or choose another folder.")
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


def text_table(header: Sequence[str], rows: Iterable[Sequence[Any]], *, left: int = 1, indent: str = "", gap: int = 2) -> str:
    """Rows under a header as aligned plain text (the commands' tables): each column as wide as its widest cell, so no
    name ("PLL-word-l2r") or value pushes its row out of line; the first `left` columns flush left, the others (numbers)
    flush right, `gap` spaces apart, every line after `indent`."""
    lines = [[str(c) for c in header], *([str(c) for c in row] for row in rows)]
    widths = [max(len(line[i]) for line in lines if i < len(line)) for i in range(len(lines[0]))]
    out = []
    for line in lines:
        cells = [c.ljust(w) if i < left else c.rjust(w) for i, (c, w) in enumerate(zip(line, widths))]
        out.append(indent + (" " * gap).join(cells).rstrip())
    return "\n".join(out)


#: The table files `write_table` writes, by suffix.
TABLE_FORMATS = (".csv", ".jsonl", ".parquet")


def check_output_file(path: str | Path, *, option: str = "--out", formats: tuple[str, ...] = TABLE_FORMATS) -> Path:
    """Refuse, before any work, an output file that cannot be written or whose suffix is not one of `formats`."""
    if not str(path).strip():
        raise OutputError(f"{option} is empty: name an output file ({', '.join(formats)}).")
    out = Path(os.path.expanduser(str(path)))
    if out.suffix.lower() not in formats:
        raise OutputError(f"{option} {out}: write a {', '.join(formats[:-1])} or {formats[-1]} file (the suffix says which).")
    if out.is_dir():
        raise OutputError(f"{option} {out} is a folder: name a file in it.")
    check_output_dir(out.parent if str(out.parent) else ".", option=option)
    return out


def write_table(frame: pd.DataFrame, path: str | Path) -> Path:
    """`frame` as a CSV (text cells neutralised: `safe_csv`), JSON lines (NaN as null) or Parquet file, written atomically."""
    path = Path(path)
    kind = path.suffix.lower()
    plain = pd.DataFrame(frame)
    if kind == ".csv":
        return atomic_write(path, safe_csv(plain))
    if kind == ".jsonl":
        text = plain.to_json(orient="records", lines=True, force_ascii=False) or ""
        return atomic_write(path, text if text.endswith("\n") or not text else text + "\n")
    if kind == ".parquet":
        import io

        buffer = io.BytesIO()
        try:
            plain.to_parquet(buffer, index=False)
        except ImportError:
            raise OutputError(f"cannot write {path}: Parquet needs pyarrow (pip install pyarrow); write .csv or .jsonl instead.") from None
        return atomic_write(path, buffer.getvalue())
    raise OutputError(f"cannot write {path}: write a {', '.join(TABLE_FORMATS)} file.")


# ---------------------------------------------------------------------------------------
# Text in markdown
# ---------------------------------------------------------------------------------------

# Characters that can start markdown (or HTML) anywhere in a line: links and images ([ ]), HTML and
# autolinks (< >), entities (&), emphasis and strikethrough (* ~), code (`), LaTeX ($), escapes (\\), table cells (|).
_ALWAYS = re.compile(r"([\\`*\[\]<>&~$|])")
# An underscore opens emphasis only at a word's edge (not inside snake_case names).
_EDGE_UNDERSCORE = re.compile(r"(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])")
# A colon followed by text: emoji and icon shortcodes (:smile:, :material/x:) and URL schemes (http://). Streamlit
# replaces shortcodes after markdown has removed backslash escapes, so a zero-width space after the colon breaks them.
_COLON = re.compile(r":(?=\S)")
_SHORTCODE = re.compile(r":(?=[A-Za-z0-9_+/-])")
# Bare web addresses (www.x, http://x) and e-mail addresses (x@y.z, mailto:x@y.z, xmpp:x@y.z) that GitHub-flavoured
# markdown turns into links. Its renderers (GitHub's, Streamlit's remark-gfm) find them in the text *after* backslash
# escapes are removed, so an escape cannot stop them: a zero-width space where the pattern needs a character breaks them
# ("www" then ".", "@" then a letter; the colon of "http://" gets one above, as every colon before text does).
_WWW = re.compile(r"(?i)(www)(?=\.)")
_AT = re.compile(r"@")
# What makes a line a heading, quote, list item or thematic break when it starts the text.
_LINE_START = re.compile(r"^(\s*)(\d*)([#>+=.)-])")


def escape_markdown(text: Any) -> str:
    """Text from a user, a file or a model (a sentence, a file, folder or model name, a label) made safe to put into
    markdown: it shows as itself, never as a link, automatic link, image, HTML, emphasis, icon, formula or table cell
    break. One line: newlines become spaces. The app's `ui.feedback.md` and the reproduction report's `report.md` use it.
    """
    out = re.sub(r"\s*[\r\n]+\s*", " ", str(text))
    out = _ALWAYS.sub(r"\\\1", out)
    out = _EDGE_UNDERSCORE.sub(r"\\_", out)
    out = _SHORTCODE.sub(":\u200b", out)
    out = _COLON.sub(r"\\:", out)
    out = _WWW.sub("\\1\u200b", out)
    out = _AT.sub("@\u200b", out)
    return _LINE_START.sub(lambda m: m.group(1) + m.group(2) + "\\" + m.group(3), out)


__all__ = [
    "TABLE_FORMATS",
    "atomic_write",
    "check_output_dir",
    "check_output_file",
    "current_umask",
    "escape_markdown",
    "json_safe",
    "neutralize_cell",
    "safe_csv",
    "text_table",
    "to_json",
    "write_table",
]
