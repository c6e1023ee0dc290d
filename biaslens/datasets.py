"""Benchmark datasets as typed sentence pairs: CrowS-Pairs, StereoSet, custom CSVs.

`load_dataset("crows-pairs")` finds a dataset at an explicit path; else under a data
folder (`data_dir` / $BIASLENS_DATA_DIR, searched recursively for the usual file name);
else in the cache folder; else downloads it from its canonical repository (CrowS-Pairs
is checked against its sha256) into the cache. Every problem with a file is reported
with the file, the row and what is wrong; nothing is dropped silently.
"""

from __future__ import annotations

import ast
import csv
import hashlib
import io
import json
import os
import tempfile
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

from .errors import DatasetError, DatasetNotFoundError
from .paths import default_cache_dir

Progress = Callable[[int, "int | None"], None]


@dataclass(frozen=True)
class Pair:
    """One sentence pair: a stereotypical sentence and its anti-stereotypical counterpart."""

    pair_id: int  # 0-based position in the source (StereoSet: among intrasentence examples)
    dataset: str  # "crows-pairs" | "stereoset" | "custom"
    bias_type: str
    direction: str  # CrowS-Pairs "stereo" / "antistereo", else ""
    sent_stereo: str  # CrowS-Pairs sent_more, StereoSet the stereotype sentence
    sent_anti: str  # CrowS-Pairs sent_less, StereoSet the anti-stereotype sentence
    unrelated: str = ""  # StereoSet only
    context: str = ""  # StereoSet only, with BLANK
    target: str = ""  # StereoSet only
    annotations: tuple[tuple[str, ...], ...] = ()  # CrowS-Pairs: the validators' label lists

    @property
    def group(self) -> str:
        """Kaneko & Bollegala's Table 3: stereo rows are Dis(advantaged), antistereo rows Adv."""
        return {"stereo": "dis", "antistereo": "adv"}.get(self.direction, "")


@dataclass(frozen=True)
class PairDataset:
    name: str
    path: Path
    sha256: str
    pairs: tuple[Pair, ...]
    notes: tuple[str, ...] = ()

    def __len__(self) -> int:
        return len(self.pairs)

    def to_frame(self):
        import pandas as pd

        columns = ["pair_id", "dataset", "bias_type", "direction", "group", "sent_stereo", "sent_anti", "unrelated", "context", "target"]
        return pd.DataFrame([{c: getattr(p, c) for c in columns} for p in self.pairs], columns=columns)


@dataclass(frozen=True)
class DatasetSource:
    name: str
    title: str
    file_name: str
    url: str
    sha256: str | None
    license: str
    homepage: str
    citation: str
    caveat: str
    alt_file_names: tuple[str, ...] = field(default=())


DATASETS: dict[str, DatasetSource] = {
    "crows-pairs": DatasetSource(
        name="crows-pairs",
        title="CrowS-Pairs",
        file_name="crows_pairs_anonymized.csv",
        url="https://raw.githubusercontent.com/nyu-mll/crows-pairs/master/data/crows_pairs_anonymized.csv",
        sha256="dfb36986ce0502abbaf7055b9176da3d08d48e07df1251991b5dfbcbceab9d0c",
        license="CC BY-SA 4.0",
        homepage="https://github.com/nyu-mll/crows-pairs",
        citation="Nangia et al. (2020), CrowS-Pairs: A Challenge Dataset for Measuring Social Biases in Masked Language Models, EMNLP.",
        caveat="Blodgett et al. (2021) report serious noise and reliability problems in CrowS-Pairs "
        "(https://aclanthology.org/2021.acl-long.81/).",
    ),
    "stereoset": DatasetSource(
        name="stereoset",
        title="StereoSet (intrasentence, dev)",
        file_name="dev.json",
        url="https://raw.githubusercontent.com/moinnadeem/StereoSet/master/data/dev.json",
        sha256=None,
        license="CC BY-SA 4.0",
        homepage="https://github.com/moinnadeem/StereoSet",
        citation="Nadeem et al. (2021), StereoSet: Measuring stereotypical bias in pretrained language models, ACL.",
        caveat="Blodgett et al. (2021) report that many StereoSet items are noisy or do not test the stereotype they name "
        "(https://aclanthology.org/2021.acl-long.81/).",
        alt_file_names=("dev.jsonl", "test.jsonl"),
    ),
}
_ALIASES = {"crows_pairs": "crows-pairs", "crowspairs": "crows-pairs", "cp": "crows-pairs", "ss": "stereoset", "stereo-set": "stereoset"}

CROWS_COLUMNS = ("sent_more", "sent_less", "stereo_antistereo", "bias_type")
CUSTOM_COLUMNS = ("sent_more", "sent_less")
STEREOSET_LINE_KEYS = ("type", "bias_type", "context", "stereotype", "anti-stereotype", "unrelated")
DIRECTIONS = ("stereo", "antistereo")


# ---------------------------------------------------------------------------------------
# Reading files
# ---------------------------------------------------------------------------------------


def _read_text(path: Path) -> str:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise DatasetError(f"cannot read the file ({exc.strerror or exc})", path=str(path)) from exc
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise DatasetError(
            f"not UTF-8 text (invalid byte at offset {exc.start}, line {line}); save it as UTF-8", path=str(path)
        ) from exc
    if not text.strip():
        raise DatasetError("the file is empty", path=str(path))
    return text


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _csv_rows(path: Path, required: Iterable[str]) -> list[dict[str, str]]:
    reader = csv.DictReader(io.StringIO(_read_text(path), newline=""))
    found = [c for c in (reader.fieldnames or []) if c]
    missing = [c for c in required if c not in found]
    if missing:
        raise DatasetError(f"missing column(s) {', '.join(missing)}; found {', '.join(found) or 'none'}", path=str(path))
    rows = list(reader)
    if not rows:
        raise DatasetError("no data rows", path=str(path))
    return rows


def _sentence(row: dict[str, Any], key: str, path: Path, row_number: int) -> str:
    value = row.get(key)
    if not isinstance(value, str) or not value.strip():
        raise DatasetError(f"empty {key}", path=str(path), row=row_number)
    return value.strip()


def _duplicate_note(pairs: list[Pair]) -> list[str]:
    seen: dict[tuple[str, str], int] = {}
    duplicates = []
    for p in pairs:
        key = (p.sent_stereo, p.sent_anti)
        if key in seen:
            duplicates.append(p.pair_id)
        seen.setdefault(key, p.pair_id)
    if not duplicates:
        return []
    shown = ", ".join(map(str, duplicates[:10])) + (" ..." if len(duplicates) > 10 else "")
    return [f"{len(duplicates)} pair(s) repeat an earlier pair (kept, as in the source): pair ids {shown}"]


def read_crows_pairs(path: str | Path) -> PairDataset:
    """CrowS-Pairs: sent_more is the stereotypical sentence whatever the direction."""
    path = Path(path)
    pairs = []
    for n, row in enumerate(_csv_rows(path, CROWS_COLUMNS), start=1):
        direction = (row.get("stereo_antistereo") or "").strip()
        if direction not in DIRECTIONS:
            raise DatasetError(f"stereo_antistereo is {direction!r}, expected stereo or antistereo", path=str(path), row=n)
        annotations: tuple[tuple[str, ...], ...] = ()
        if row.get("annotations"):
            try:
                parsed = ast.literal_eval(row["annotations"])
                annotations = tuple(tuple(str(label) for label in labels) for labels in parsed)
            except (ValueError, SyntaxError, TypeError) as exc:
                raise DatasetError(f"annotations are not a list of label lists ({row['annotations'][:40]!r})", path=str(path), row=n) from exc
        pairs.append(
            Pair(
                pair_id=n - 1,
                dataset="crows-pairs",
                bias_type=(row.get("bias_type") or "").strip(),
                direction=direction,
                sent_stereo=_sentence(row, "sent_more", path, n),
                sent_anti=_sentence(row, "sent_less", path, n),
                annotations=annotations,
            )
        )
    sha = _sha256(path)
    notes = _duplicate_note(pairs)
    if sha != DATASETS["crows-pairs"].sha256:
        notes.insert(0, f"{path.name} differs from the published CrowS-Pairs file (sha256 {sha[:12]}...): it may be a modified copy.")
    return PairDataset("crows-pairs", path, sha, tuple(pairs), tuple(notes))


def read_custom_pairs(path: str | Path) -> PairDataset:
    """A CSV with sent_more, sent_less and optional bias_type, stereo_antistereo columns."""
    path = Path(path)
    pairs = []
    for n, row in enumerate(_csv_rows(path, CUSTOM_COLUMNS), start=1):
        direction = (row.get("stereo_antistereo") or "").strip()
        if direction and direction not in DIRECTIONS:
            raise DatasetError(f"stereo_antistereo is {direction!r}, expected stereo, antistereo or empty", path=str(path), row=n)
        pairs.append(
            Pair(
                pair_id=n - 1,
                dataset="custom",
                bias_type=(row.get("bias_type") or "").strip(),
                direction=direction,
                sent_stereo=_sentence(row, "sent_more", path, n),
                sent_anti=_sentence(row, "sent_less", path, n),
            )
        )
    return PairDataset("custom", path, _sha256(path), tuple(pairs), tuple(_duplicate_note(pairs)))


def _stereoset_examples(path: Path, text: str) -> list[tuple[int, dict[str, Any]]]:
    """(line or example number, {bias_type, target, context, stereotype, anti-stereotype, unrelated})."""
    stripped = text.lstrip()
    if stripped.startswith("{") and '"data"' in stripped[:2000] and not _is_jsonl(stripped):
        try:
            document = json.loads(text)
        except json.JSONDecodeError as exc:
            raise DatasetError(f"malformed JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}", path=str(path)) from exc
        try:
            items = document["data"]["intrasentence"]
        except (KeyError, TypeError) as exc:
            raise DatasetError('expected {"data": {"intrasentence": [...]}} (StereoSet dev.json)', path=str(path)) from exc
        out = []
        for n, item in enumerate(items, start=1):
            example = {k: item.get(k, "") for k in ("bias_type", "target", "context")}
            for sentence in item.get("sentences", []):
                if sentence.get("gold_label") in ("stereotype", "anti-stereotype", "unrelated"):
                    example[sentence["gold_label"]] = sentence.get("sentence", "")
            out.append((n, example))
        return out
    out = []
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DatasetError(f"malformed JSON line: {exc.msg} (column {exc.colno})", path=str(path), row=n) from exc
        if not isinstance(item, dict):
            raise DatasetError("expected one JSON object per line", path=str(path), row=n)
        missing = [k for k in STEREOSET_LINE_KEYS if k not in item]
        if missing:
            raise DatasetError(f"missing key(s) {', '.join(missing)}", path=str(path), row=n)
        if item["type"] == "intrasentence":
            out.append((n, item))
    return out


def _is_jsonl(text: str) -> bool:
    first = text.split("\n", 1)[0]
    try:
        return isinstance(json.loads(first), dict) and "\n" in text.strip()
    except json.JSONDecodeError:
        return False


def read_stereoset(path: str | Path) -> PairDataset:
    """StereoSet intrasentence pairs from the original dev.json or the one-object-per-line format."""
    path = Path(path)
    examples = _stereoset_examples(path, _read_text(path))
    pairs, blank_issues = [], []
    for index, (n, ex) in enumerate(examples):
        for key in ("stereotype", "anti-stereotype"):
            if not isinstance(ex.get(key), str) or not ex[key].strip():
                raise DatasetError(f"missing or empty {key} sentence", path=str(path), row=n)
        context = str(ex.get("context") or "")
        if context.count("BLANK") != 1:
            blank_issues.append(index)
        pairs.append(
            Pair(
                pair_id=index,
                dataset="stereoset",
                bias_type=str(ex.get("bias_type") or ""),
                direction="",
                sent_stereo=ex["stereotype"].strip(),
                sent_anti=ex["anti-stereotype"].strip(),
                unrelated=str(ex.get("unrelated") or "").strip(),
                context=context,
                target=str(ex.get("target") or ""),
            )
        )
    if not pairs:
        raise DatasetError("no intrasentence examples", path=str(path))
    notes = _duplicate_note(pairs)
    if blank_issues:
        notes.append(f"{len(blank_issues)} context(s) do not contain exactly one BLANK (kept): pair ids {', '.join(map(str, blank_issues[:10]))}")
    return PairDataset("stereoset", path, _sha256(path), tuple(pairs), tuple(notes))


def read_pairs_file(path: str | Path) -> PairDataset:
    """Any supported file, recognised by its content: CrowS-Pairs, custom CSV, or StereoSet JSON."""
    path = Path(path)
    if path.suffix.lower() in (".json", ".jsonl"):
        return read_stereoset(path)
    header = next(csv.reader(io.StringIO(_read_text(path).split("\n", 1)[0])), [])
    if all(c in header for c in CROWS_COLUMNS):
        return read_crows_pairs(path)
    return read_custom_pairs(path)


# ---------------------------------------------------------------------------------------
# Finding and downloading
# ---------------------------------------------------------------------------------------


def canonical_name(name: str) -> str | None:
    key = name.strip().lower()
    key = _ALIASES.get(key, key)
    return key if key in DATASETS else None


def _matches(source: DatasetSource, path: Path) -> bool:
    if path.name == source.file_name:
        return True
    # The simplified StereoSet file circulates as test.jsonl / dev.jsonl: accept it only
    # inside a folder that says it is StereoSet.
    return path.name in source.alt_file_names and "stereoset" in path.parent.name.lower()


def locate_dataset(name: str, *, data_dir: str | Path | None = None, cache_dir: str | Path | None = None) -> Path | None:
    """Where a known dataset is on this machine, or None."""
    key = canonical_name(name)
    if key is None:
        return None
    source = DATASETS[key]
    folders = []
    explicit = data_dir or os.environ.get("BIASLENS_DATA_DIR")
    if explicit:
        folders.append(Path(explicit).expanduser())
    folders.append(_cache_folder(key, cache_dir))
    for folder in folders:
        if folder.is_dir():
            for candidate in sorted(folder.rglob("*")):
                if candidate.is_file() and _matches(source, candidate):
                    return candidate
    return None


def _cache_folder(key: str, cache_dir: str | Path | None) -> Path:
    return (Path(cache_dir) if cache_dir else default_cache_dir()) / "datasets" / key


def load_dataset(
    name_or_path: str | Path,
    *,
    data_dir: str | Path | None = None,
    cache_dir: str | Path | None = None,
    download: bool = True,
    progress: Progress | None = None,
) -> PairDataset:
    """A dataset by name ("crows-pairs", "stereoset") or by path (CrowS-Pairs, StereoSet or custom file)."""
    key = canonical_name(str(name_or_path))
    if key is None:
        path = Path(name_or_path).expanduser()
        if path.is_file():
            return read_pairs_file(path)
        raise DatasetError(
            f"no file {name_or_path} and no dataset by that name; known datasets: {', '.join(DATASETS)}"
        )
    found = locate_dataset(key, data_dir=data_dir, cache_dir=cache_dir)
    if found is None:
        if not download:
            raise DatasetNotFoundError(_where_to_put_it(key, cache_dir, "downloads are switched off"))
        found = download_dataset(key, cache_dir=cache_dir, progress=progress)
    return read_stereoset(found) if key == "stereoset" else read_crows_pairs(found)


def _where_to_put_it(key: str, cache_dir: str | Path | None, reason: str) -> str:
    source = DATASETS[key]
    return (
        f"{source.title} not found and could not be downloaded ({reason}). Download {source.file_name} from "
        f"{source.url} and put it in {_cache_folder(key, cache_dir)}/, or pass --data-dir DIR / set "
        f"BIASLENS_DATA_DIR to a folder that contains it."
    )


def download_dataset(key: str, *, cache_dir: str | Path | None = None, progress: Progress | None = None, timeout: float = 10.0) -> Path:
    """Download a dataset into the cache; the file appears only once complete (and verified)."""
    source = DATASETS[key]
    folder = _cache_folder(key, cache_dir)
    target = folder / source.file_name
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise DatasetNotFoundError(_where_to_put_it(key, cache_dir, f"cannot create {folder}: {exc.strerror or exc}")) from exc
    fd, tmp_name = tempfile.mkstemp(dir=folder, prefix=f".{source.file_name}.", suffix=".part")
    tmp = Path(tmp_name)
    try:
        digest = hashlib.sha256()
        with os.fdopen(fd, "wb") as out, urllib.request.urlopen(source.url, timeout=timeout) as response:
            total = response.headers.get("Content-Length")
            total = int(total) if total and total.isdigit() else None
            done = 0
            while block := response.read(1 << 16):
                out.write(block)
                digest.update(block)
                done += len(block)
                if progress is not None:
                    progress(done, total)
        if source.sha256 and digest.hexdigest() != source.sha256:
            raise DatasetError(
                f"the downloaded {source.file_name} has sha256 {digest.hexdigest()[:12]}..., expected "
                f"{source.sha256[:12]}...; it was removed. Try again, or download it by hand from {source.url}."
            )
        os.replace(tmp, target)
    except (urllib.error.URLError, TimeoutError, OSError) as exc:
        reason = getattr(exc, "reason", None) or exc
        raise DatasetNotFoundError(_where_to_put_it(key, cache_dir, str(reason))) from exc
    finally:
        tmp.unlink(missing_ok=True)
    return target


__all__ = [
    "DATASETS",
    "DatasetSource",
    "Pair",
    "PairDataset",
    "canonical_name",
    "download_dataset",
    "load_dataset",
    "locate_dataset",
    "read_crows_pairs",
    "read_custom_pairs",
    "read_pairs_file",
    "read_stereoset",
]
