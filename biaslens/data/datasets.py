"""Benchmark datasets as typed sentence pairs: CrowS-Pairs, StereoSet, custom CSVs.

`load_dataset("crows-pairs")` reads an explicit file path; else finds the dataset under
a data folder (`data_dir`, else $BIASLENS_DATA_DIR, searched recursively for the
dataset's usual file names); else in the cache folder; else downloads it from its
canonical repository into the cache (CrowS-Pairs is checked against its sha256).

Reading is a pure function of the file: sentences are kept exactly as written, every
problem is a `DatasetError` naming the file, the row and what is wrong, and nothing
is dropped or changed silently (duplicates, skipped examples and oddities become
`notes`).
"""

from __future__ import annotations

import ast
import csv
import dataclasses
import io
import json
import os
import urllib.parse
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Literal, Sequence, Unpack, overload

from biaslens.data import datafiles
from biaslens.data.datafiles import DOWNLOAD_TIMEOUT_S, LoadOptions, Progress, read_text  # noqa: F401 (DOWNLOAD_TIMEOUT_S: re-exported)
from biaslens.errors import DatasetError, DatasetNotFoundError
from biaslens.paths import default_cache_dir

if TYPE_CHECKING:
    import pandas

    from biaslens.data.multiple_choice import ChoiceDataset

# ---------------------------------------------------------------------------------------
# Types
# ---------------------------------------------------------------------------------------

_GROUPS = {"stereo": "dis", "antistereo": "adv"}


@dataclass(frozen=True)
class Pair:
    """One sentence pair: a stereotypical sentence and its anti-stereotypical counterpart."""

    pair_id: int  # 0-based position in the source (StereoSet: among intrasentence examples)
    dataset: str  # "crows-pairs" | "stereoset" | "custom"
    bias_type: str  # "" if unknown
    direction: str  # CrowS-Pairs (and custom) "stereo" / "antistereo", else ""
    sent_stereo: str  # CrowS-Pairs sent_more, StereoSet the stereotype sentence
    sent_anti: str  # CrowS-Pairs sent_less, StereoSet the anti-stereotype sentence
    unrelated: str = ""  # StereoSet only
    context: str = ""  # StereoSet only, with BLANK
    target: str = ""  # StereoSet only
    annotations: tuple[tuple[str, ...], ...] = ()  # CrowS-Pairs: the validators' label lists
    source_id: str = ""  # the id written in the source file when it is not pair_id itself (revised CrowS-Pairs' "LA0", ...)

    @property
    def group(self) -> str:
        """Kaneko & Bollegala's Table 3: stereo rows are "dis" (disadvantaged), antistereo rows "adv" (advantaged)."""
        return _GROUPS.get(self.direction, "")


FRAME_COLUMNS = ("pair_id", "dataset", "bias_type", "direction", "group", "sent_stereo", "sent_anti", "unrelated", "context", "target")


@dataclass(frozen=True)
class PairDataset:
    """The pairs of one file, with where they came from and what a user should know about them."""

    name: str  # "crows-pairs" | "stereoset" | "custom"
    path: Path
    sha256: str  # of the file's bytes
    pairs: tuple[Pair, ...]
    notes: tuple[str, ...] = ()  # one line each: duplicates, skipped examples, a modified copy, ...

    #: What kind of dataset this is (`biaslens.data.multiple_choice.ChoiceDataset` says "choices").
    kind = "pairs"

    def __len__(self) -> int:
        return len(self.pairs)

    def to_frame(self) -> pandas.DataFrame:
        """One row per pair, columns `FRAME_COLUMNS` (annotations left out)."""
        import pandas as pd

        return pd.DataFrame([{c: getattr(p, c) for c in FRAME_COLUMNS} for p in self.pairs], columns=list(FRAME_COLUMNS))


@dataclass(frozen=True)
class DatasetSource:
    """A public dataset: its usual file name(s), where to download it, and how to cite it."""

    name: str
    title: str
    file_name: str
    url: str
    sha256: str | None  # None: no published checksum
    license: str
    homepage: str
    caveat: str  # one line shown beside results
    citation: str
    # Other names the file circulates under; accepted only inside a folder whose name
    # contains the dataset's name (a bare "test.jsonl" could be anything).
    alt_file_names: tuple[str, ...] = ()
    # When set, even the primary file name is accepted only inside a folder whose name contains the
    # dataset's name or one of these (a bare "japanese.json" could be anything).
    folder_hints: tuple[str, ...] = ()


DATASETS: dict[str, DatasetSource] = {
    "crows-pairs": DatasetSource(
        name="crows-pairs",
        title="CrowS-Pairs",
        file_name="crows_pairs_anonymized.csv",
        url="https://raw.githubusercontent.com/nyu-mll/crows-pairs/master/data/crows_pairs_anonymized.csv",
        sha256="dfb36986ce0502abbaf7055b9176da3d08d48e07df1251991b5dfbcbceab9d0c",
        license="CC BY-SA 4.0",
        homepage="https://github.com/nyu-mll/crows-pairs",
        caveat="Blodgett et al. (2021) report serious noise and reliability problems in CrowS-Pairs (https://aclanthology.org/2021.acl-long.81/).",
        citation="Nikita Nangia, Clara Vania, Rasika Bhalerao, Samuel R. Bowman (2020). CrowS-Pairs: A Challenge Dataset "
        "for Measuring Social Biases in Masked Language Models. EMNLP 2020.",
    ),
    "stereoset": DatasetSource(
        name="stereoset",
        title="StereoSet",
        file_name="dev.json",
        url="https://raw.githubusercontent.com/moinnadeem/StereoSet/master/data/dev.json",
        sha256=None,
        license="CC BY-SA 4.0",
        homepage="https://github.com/moinnadeem/StereoSet",
        caveat="Intrasentence dev split only; Blodgett et al. (2021) report that many StereoSet items are noisy or do not "
        "test the stereotype they name (https://aclanthology.org/2021.acl-long.81/).",
        citation="Moin Nadeem, Anna Bethke, Siva Reddy (2021). StereoSet: Measuring stereotypical bias in pretrained "
        "language models. ACL-IJCNLP 2021.",
        alt_file_names=("dev.jsonl", "test.jsonl"),
    ),
}
_ALIASES = {"crows_pairs": "crows-pairs", "crowspairs": "crows-pairs", "cp": "crows-pairs", "ss": "stereoset"}

CROWS_PAIRS_COLUMNS = ("sent_more", "sent_less", "stereo_antistereo", "bias_type", "annotations")
CUSTOM_COLUMNS = ("sent_more", "sent_less")
_STEREOSET_LABELS = ("stereotype", "anti-stereotype", "unrelated")
_STEREOSET_TYPES = ("intrasentence", "intersentence")

# ---------------------------------------------------------------------------------------
# Reading files
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Row:
    """One CSV data record: its 1-based number among the records, the line it starts on, its values."""

    number: int
    line: int
    values: dict[str, str]

    def error(self, path: Path, message: str) -> DatasetError:
        return DatasetError(f"{message} (line {self.line})", path=str(path), row=self.number)


def _is_blank(fields: list[str]) -> bool:
    return not any(f.strip() for f in fields)


def _csv_header(text: str) -> list[str]:
    """The column names (the first non-blank record), or [] when there is none or it is not CSV."""
    try:
        for fields in csv.reader(io.StringIO(text, newline="")):
            if not _is_blank(fields):
                return [f.strip() for f in fields]
    except csv.Error:
        pass
    return []


#: The most columns a CSV or tab-separated pairs file may have (CrowS-Pairs has 6); a wider header is refused.
MAX_COLUMNS = 1_000
#: The most column names a message lists.
_SHOWN_COLUMNS = 12


def _check_header(path: Path, header: list[str], required: Sequence[str], kind: str = "") -> None:
    """Refuse a header (in time linear in its width) above `MAX_COLUMNS`, repeating a column, or lacking `required` ones."""
    if len(header) > MAX_COLUMNS:
        raise DatasetError(
            f"the{kind} header has {len(header):,} columns; a pairs file has at most {MAX_COLUMNS:,} (sent_more, sent_less, ...)", path=str(path)
        )
    repeated = sorted(c for c, n in Counter(header).items() if c and n > 1)
    if repeated:
        raise DatasetError(f"the header repeats column(s) {', '.join(repeated)}: keep one column of each name", path=str(path))
    missing = [c for c in required if c not in header]
    if missing:
        found = ", ".join(c or "(unnamed)" for c in header[:_SHOWN_COLUMNS]) + (", …" if len(header) > _SHOWN_COLUMNS else "")
        raise DatasetError(f"missing column(s) {', '.join(missing)}{' in the' + kind + ' header' if kind else ''}; found {found}", path=str(path))


def _csv_rows(path: Path, text: str, required: tuple[str, ...]) -> list[_Row]:
    """The data records as dicts; the header must hold `required` and every record as many fields as the header."""
    reader = csv.reader(io.StringIO(text, newline=""))
    header: list[str] | None = None
    rows: list[_Row] = []
    start = 1
    try:
        for fields in reader:
            line, start = start, reader.line_num + 1
            if _is_blank(fields):
                continue
            if header is None:
                header = [f.strip() for f in fields]
                _check_header(path, header, required)
                continue
            row = _Row(len(rows) + 1, line, dict(zip(header, fields)))
            if len(fields) != len(header):
                raise row.error(path, f"{len(fields)} fields where the header has {len(header)}; quote sentences that contain commas")
            rows.append(row)
    except csv.Error as exc:
        row_number = len(rows) + 1 if header is not None else None
        raise DatasetError(f"not valid CSV: {exc} (line {reader.line_num})", path=str(path), row=row_number) from exc
    if not rows:
        raise DatasetError("no data rows", path=str(path))
    return rows


def _sentence(value: Any) -> str | None:
    """`value` if it is a non-blank string (kept exactly as written), else None."""
    return value if isinstance(value, str) and value.strip() else None


def _csv_sentence(path: Path, row: _Row, column: str) -> str:
    sentence = _sentence(row.values[column])
    if sentence is None:
        raise row.error(path, f"{column} is empty")
    return sentence


def _csv_direction(path: Path, row: _Row, *, optional: bool) -> str:
    direction = row.values.get("stereo_antistereo", "").strip()
    if direction in _GROUPS or (optional and not direction):
        return direction
    expected = "stereo, antistereo or empty" if optional else "stereo or antistereo"
    raise row.error(path, f"stereo_antistereo is {direction!r}, expected {expected}")


def _annotations(path: Path, row: _Row) -> tuple[tuple[str, ...], ...]:
    """The validators' label lists, e.g. "[['race-color'], ['race-color', 'gender']]" (parsed as a literal, never run)."""
    text = row.values["annotations"]
    try:
        parsed = ast.literal_eval(text.strip())
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        parsed = None
    if not isinstance(parsed, list | tuple) or not all(
        isinstance(labels, list | tuple) and all(isinstance(label, str) for label in labels) for labels in parsed
    ):
        shown = text if len(text) <= 40 else text[:40] + "…"
        raise row.error(path, f"annotations {shown!r} are not a list of label lists such as [['race-color'], ['gender']]")
    return tuple(tuple(labels) for labels in parsed)


def _plural(n: int, one: str, many: str) -> str:
    return f"{n:,} {one if n == 1 else many}"


def _id_list(ids: list[int]) -> str:
    return ", ".join(map(str, ids[:10])) + (", …" if len(ids) > 10 else "")


def _duplicate_notes(pairs: list[Pair]) -> list[str]:
    """A note counting the pairs whose two sentences repeat an earlier pair's (they are kept)."""
    seen: set[tuple[str, str]] = set()
    repeats = []
    for p in pairs:
        key = (p.sent_stereo, p.sent_anti)
        if key in seen:
            repeats.append(p.pair_id)
        seen.add(key)
    if not repeats:
        return []
    return [f"{_plural(len(repeats), 'pair repeats', 'pairs repeat')} an earlier pair (kept, as in the source): pair ids {_id_list(repeats)}"]


def _crows_pairs(path: Path, text: str, sha256: str) -> PairDataset:
    pairs = []
    for row in _csv_rows(path, text, CROWS_PAIRS_COLUMNS):
        pairs.append(
            Pair(
                pair_id=row.number - 1,
                dataset="crows-pairs",
                bias_type=row.values["bias_type"].strip(),
                direction=_csv_direction(path, row, optional=False),
                sent_stereo=_csv_sentence(path, row, "sent_more"),
                sent_anti=_csv_sentence(path, row, "sent_less"),
                annotations=_annotations(path, row),
            )
        )
    notes = _duplicate_notes(pairs)
    expected = DATASETS["crows-pairs"].sha256
    if expected and sha256 != expected:
        notes.insert(
            0, f"{path.name} is not the published CrowS-Pairs file (sha256 {sha256[:12]}…, expected {expected[:12]}…): it may be a modified copy."
        )
    return PairDataset("crows-pairs", path, sha256, tuple(pairs), tuple(notes))


def _custom_pairs(path: Path, text: str, sha256: str) -> PairDataset:
    pairs = [
        Pair(
            pair_id=row.number - 1,
            dataset="custom",
            bias_type=row.values.get("bias_type", "").strip(),
            direction=_csv_direction(path, row, optional=True),
            sent_stereo=_csv_sentence(path, row, "sent_more"),
            sent_anti=_csv_sentence(path, row, "sent_less"),
        )
        for row in _csv_rows(path, text, CUSTOM_COLUMNS)
    ]
    return PairDataset("custom", path, sha256, tuple(pairs), tuple(_duplicate_notes(pairs)))


def _is_json_lines(path: Path, text: str) -> bool:
    """One object per line: a .jsonl file, or a first line that is a whole StereoSet line object (with "type")."""
    if path.suffix.lower() == ".jsonl":
        return True
    first = next((line for line in text.split("\n") if line.strip()), "")
    try:
        item = json.loads(first)
    except (ValueError, RecursionError):
        return False
    return isinstance(item, dict) and "type" in item


def _stereoset_lines(path: Path, text: str) -> tuple[list[tuple[int, dict[str, Any]]], int]:
    """(line number, example) of every intrasentence line, and the number of intersentence lines."""
    examples, intersentence = [], 0
    for number, line in enumerate(text.split("\n"), start=1):  # not splitlines(): JSON strings may hold U+2028
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DatasetError(f"malformed JSON line: {exc.msg} (column {exc.colno})", path=str(path), row=number) from exc
        except (ValueError, RecursionError) as exc:
            raise DatasetError(f"malformed JSON line: {exc}", path=str(path), row=number) from exc
        if not isinstance(item, dict):
            raise DatasetError("expected one JSON object per line", path=str(path), row=number)
        kind = item.get("type")
        if kind not in _STEREOSET_TYPES:
            raise DatasetError(f"type is {kind!r}, expected intrasentence or intersentence", path=str(path), row=number)
        if kind == "intrasentence":
            examples.append((number, item))
        else:
            intersentence += 1
    return examples, intersentence


def parse_json_document(path: Path, text: str) -> Any:
    """The JSON document `text` of the file `path`; malformed JSON is a DatasetError naming line and column."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise DatasetError(f"malformed JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})", path=str(path)) from exc
    except (ValueError, RecursionError) as exc:
        raise DatasetError(f"malformed JSON: {exc}", path=str(path)) from exc


def _stereoset_document(path: Path, text: str) -> tuple[list[tuple[int, dict[str, Any]]], int]:
    """(position, example) of every intrasentence example of a dev.json, and the number of intersentence ones."""
    document = parse_json_document(path, text)
    data = document.get("data") if isinstance(document, dict) else None
    items = data.get("intrasentence") if isinstance(data, dict) else None
    if not isinstance(items, list):
        raise DatasetError(
            'expected StereoSet\'s dev.json ({"version": ..., "data": {"intrasentence": [...]}}) or one JSON object per line',
            path=str(path),
        )
    examples = []
    for number, item in enumerate(items, start=1):
        sentences = item.get("sentences") if isinstance(item, dict) else None
        if not isinstance(sentences, list):
            raise DatasetError("intrasentence example without a list of sentences", path=str(path), row=number)
        example = {k: item.get(k) for k in ("target", "bias_type", "context")}
        for sentence in sentences:
            label = sentence.get("gold_label") if isinstance(sentence, dict) else None
            if not isinstance(label, str) and label is not None:
                raise DatasetError(
                    f"intrasentence example {_shown(item.get('id'))} has a gold_label that is {_kind(label)}, "
                    f"expected one of {', '.join(_STEREOSET_LABELS)}",
                    path=str(path),
                    row=number,
                )
            if label not in _STEREOSET_LABELS or label in example:
                problem = "a second" if label in example else "an unknown"
                raise DatasetError(f"intrasentence example {item.get('id')!r} has {problem} gold_label {label!r}", path=str(path), row=number)
            example[label] = sentence.get("sentence")
        examples.append((number, example))
    intersentence = data.get("intersentence")
    return examples, len(intersentence) if isinstance(intersentence, list) else 0


def _text(value: Any) -> str:
    return "" if value is None else str(value)


def _kind(value: Any) -> str:
    """What a JSON value is, for messages: 'a list', 'a number', ..."""
    names = {dict: "an object", list: "a list", bool: "true/false", int: "a number", float: "a number", str: "text"}
    return names.get(type(value), type(value).__name__)


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:40] + "…"


def _check_text_fields(path: Path, row: int, example: dict[str, Any], fields: tuple[str, ...]) -> None:
    """Refuse a field that is present but not text (a list, an object, a number) with file, row and field."""
    for name in fields:
        value = example.get(name)
        if value is not None and not isinstance(value, str):
            raise DatasetError(f"{name} is {_kind(value)}, expected text", path=str(path), row=row)


def _stereoset(path: Path, text: str, sha256: str) -> PairDataset:
    examples, intersentence = (_stereoset_lines if _is_json_lines(path, text) else _stereoset_document)(path, text)
    pairs, odd_contexts = [], []
    for pair_id, (row, example) in enumerate(examples):
        _check_text_fields(path, row, example, ("stereotype", "anti-stereotype", "unrelated", "context", "target", "bias_type"))
        sentences = {}
        for label in ("stereotype", "anti-stereotype"):
            sentences[label] = _sentence(example.get(label))
            if sentences[label] is None:
                raise DatasetError(f"missing or empty {label} sentence", path=str(path), row=row)
        context = _text(example.get("context"))
        if context.count("BLANK") != 1:
            odd_contexts.append(pair_id)
        pairs.append(
            Pair(
                pair_id=pair_id,
                dataset="stereoset",
                bias_type=_text(example.get("bias_type")),
                direction="",
                sent_stereo=sentences["stereotype"],
                sent_anti=sentences["anti-stereotype"],
                unrelated=_text(example.get("unrelated")),
                context=context,
                target=_text(example.get("target")),
            )
        )
    if not pairs:
        raise DatasetError("no intrasentence examples", path=str(path))
    notes = _duplicate_notes(pairs)
    if odd_contexts:
        notes.append(
            f"{_plural(len(odd_contexts), 'context does', 'contexts do')} not contain exactly one BLANK (pair ids {_id_list(odd_contexts)}; kept)"
        )
    if intersentence:
        notes.append(f"{_plural(intersentence, 'intersentence example', 'intersentence examples')} skipped: only intrasentence examples are pairs")
    return PairDataset("stereoset", path, sha256, tuple(pairs), tuple(notes))


def read_crows_pairs(path: str | Path) -> PairDataset:
    """CrowS-Pairs (crows_pairs_anonymized.csv): sent_more is the stereotypical sentence whatever the direction.

    A file other than the published one is read too, with a note saying it may be a modified copy.
    """
    path = Path(path)
    return _crows_pairs(path, *read_text(path))


def read_stereoset(path: str | Path) -> PairDataset:
    """StereoSet intrasentence pairs from the original dev.json or the one-object-per-line format."""
    path = Path(path)
    return _stereoset(path, *read_text(path))


def read_custom_pairs(path: str | Path) -> PairDataset:
    """A CSV with sent_more, sent_less and optional bias_type, stereo_antistereo columns."""
    path = Path(path)
    return _custom_pairs(path, *read_text(path))


def read_pairs_file(path: str | Path) -> PairDataset:
    """Any supported file, recognised by extension and content: StereoSet JSON, CrowS-Pairs CSV or custom CSV."""
    path = Path(path)
    text, sha256 = read_text(path)
    newer = _newer_format(path, text, sha256)
    if newer is not None:
        return newer
    if path.suffix.lower() in (".json", ".jsonl") or text.lstrip().startswith("{"):
        return _stereoset(path, text, sha256)
    if all(c in _csv_header(text) for c in CROWS_PAIRS_COLUMNS):
        return _crows_pairs(path, text, sha256)
    return _custom_pairs(path, text, sha256)


_READERS: dict[str, Callable[[str | Path], PairDataset]] = {"crows-pairs": read_crows_pairs, "stereoset": read_stereoset}

# ---------------------------------------------------------------------------------------
# Finding and downloading
# ---------------------------------------------------------------------------------------


def canonical_name(name: str) -> str | None:
    """The dataset key for a name or alias ("cp", "crows_pairs", "ss", ...), or None."""
    key = name.strip().lower()
    key = _ALIASES.get(key, key)
    return key if key in DATASETS else None


def _known_names() -> str:
    return ", ".join(DATASETS)


def _accepted(source: DatasetSource) -> Callable[[Path, str], bool]:
    """Which found files count as `source`: the primary name anywhere, other names only in a folder named for it."""

    def accept(candidate: Path, file_name: str) -> bool:
        parent = candidate.parent.name.lower()
        alt_ok = source.name in parent or any(hint in parent for hint in source.folder_hints)
        return (file_name == source.file_name and not source.folder_hints) or alt_ok

    return accept


def locate_source(source: DatasetSource, *, data_dir: str | Path | None = None, cache_dir: str | Path | None = None) -> Path | None:
    """Where `source`'s file is on this machine (data folder first, then its cache folder), or None."""
    names = (source.file_name, *source.alt_file_names)
    return datafiles.locate(source.name, names, data_dir=data_dir, cache_dir=cache_dir, accept=_accepted(source))


def locate_dataset(name: str, *, data_dir: str | Path | None = None, cache_dir: str | Path | None = None) -> Path | None:
    """Where a known dataset is on this machine (data folder first, then the cache), or None."""
    key = canonical_name(name)
    if key is None:
        raise DatasetError(f"no dataset named {name!r}; known datasets: {_known_names()}")
    return locate_source(DATASETS[key], data_dir=data_dir, cache_dir=cache_dir)


@overload
def load_dataset(name_or_path: Literal["bbq", "winogender"], **options: Unpack[LoadOptions]) -> ChoiceDataset: ...


@overload
def load_dataset(name_or_path: str | Path, **options: Unpack[LoadOptions]) -> PairDataset: ...


def load_dataset(
    name_or_path: str | Path,
    *,
    data_dir: str | Path | None = None,
    cache_dir: str | Path | None = None,
    download: bool = True,
    progress: Progress | None = None,
) -> PairDataset | ChoiceDataset:
    """A dataset from a file path, or by name ("crows-pairs", "stereoset"): data folder, cache, else download.

    A multiple-choice dataset (BBQ, Winogender, a subset such as "bbq-age" or "winogender-gotcha", a BBQ category file
    or a folder of them, a folder of Winogender's files) is a `ChoiceDataset` (`kind` "choices";
    `biaslens.data.multiple_choice.load_choice_dataset`), whatever the type of `name_or_path` says: asking it for
    `pairs` is a one-line error.
    """
    from biaslens.data import multiple_choice

    path = Path(os.path.expanduser(name_or_path))
    if multiple_choice.choice_dataset_name(str(name_or_path)) is not None or (os.path.exists(path) and multiple_choice.is_choice_path(path)):
        return multiple_choice.load_choice_dataset(name_or_path, data_dir=data_dir, cache_dir=cache_dir, download=download, progress=progress)
    # (os.path: a name too long for a path, or with a NUL, is no file, never an OSError.) Anything there but a folder is read
    # as a pairs file, so a FIFO or a device is refused as one (`datafiles.check_data_file`), not called "no file".
    if os.path.exists(path) and not os.path.isdir(path):
        return read_pairs_file(path)
    key = canonical_name(str(name_or_path))
    if key is None:
        what = f"{name_or_path} is a folder, not a dataset file" if os.path.isdir(path) else f"no file {name_or_path}"
        raise DatasetError(f"{what} and no dataset by that name; known datasets: {_known_names()}, or a pairs file (.csv, .json, .jsonl)")
    found = locate_dataset(key, data_dir=data_dir, cache_dir=cache_dir)
    if found is not None:
        return _READERS[key](found)
    if not download:
        raise DatasetNotFoundError(_not_found_message(key, cache_dir, "downloads are switched off"))
    return _download(key, cache_dir, progress)


def _not_found_message(key: str, cache_dir: str | Path | None, why: str) -> str:
    """One line: what is missing, why, where to get it and where to put it."""
    source = DATASETS[key]
    return (
        f"{source.title} not found and {why}. Download {source.file_name} from {source.url} and put it in "
        f"{datafiles.cache_folder(key, cache_dir)}/, or pass --data-dir DIR / set BIASLENS_DATA_DIR to a folder that contains it."
    )


def _download(key: str, cache_dir: str | Path | None, progress: Progress | None) -> PairDataset:
    """Download a dataset into the cache. The file appears there only once complete, verified and readable."""
    source, read, got = DATASETS[key], _READERS[key], []
    target = datafiles.download(
        source.url,
        datafiles.cache_folder(key, cache_dir) / source.file_name,
        sha256=source.sha256,
        not_found=lambda why: _not_found_message(key, cache_dir, why),
        check=lambda path: got.append(read(path)),
        progress=progress,
    )
    return dataclasses.replace(got[0], path=target)


# ---------------------------------------------------------------------------------------
# Revised and translated CrowS-Pairs, WinoQueer
# ---------------------------------------------------------------------------------------

#: CrowS-Pairs' nine bias types; the "+210" revision adds "autre" (French: other).
CROWS_PAIRS_BIAS_TYPES = (
    "race-color",
    "gender",
    "socioeconomic",
    "nationality",
    "religion",
    "age",
    "sexual-orientation",
    "physical-appearance",
    "disability",
)
_REVISED_BIAS_TYPES = (*CROWS_PAIRS_BIAS_TYPES, "autre")
_MEMOIRE = "https://raw.githubusercontent.com/JulienBez/MemoireMaster/1d7c0b700e50fce66e6d08d8d0c2a2705d89afa4/data/"
_KANEKO_ML = "https://raw.githubusercontent.com/kanekomasahiro/bias_eval_in_multiple_mlm/bb2f2c718d17f41444112b4191e46fd8d436a141/translated_data/"
_BLODGETT = "Blodgett et al. (2021) report serious noise and reliability problems in CrowS-Pairs (https://aclanthology.org/2021.acl-long.81/)"
_NEVEOL = (
    "Aurélie Névéol, Yoann Dupont, Julien Bezançon, Karën Fort (2022). French CrowS-Pairs: Extending a challenge dataset "
    "for measuring social bias in masked language models to a language other than English. ACL 2022."
)
_KANEKO_NAACL = (
    "Masahiro Kaneko, Aizhan Imankulova, Danushka Bollegala, Naoaki Okazaki (2022). Gender Bias in Masked Language Models "
    "for Multiple Languages. NAACL 2022."
)


def _neveol_source(name: str, title: str, file_name: str, sha256: str, caveat: str) -> DatasetSource:
    """A file of Névéol et al. (2022)'s revised / French CrowS-Pairs (CC BY-SA 4.0), with Blodgett's caveat."""
    return DatasetSource(
        name=name,
        title=title,
        file_name=file_name,
        url=_MEMOIRE + urllib.parse.quote(file_name),
        sha256=sha256,
        license="CC BY-SA 4.0",
        homepage="https://gitlab.inria.fr/french-crows-pairs/acl-2022-paper-data-and-code",
        caveat=f"{caveat} {_BLODGETT}.",
        citation=_NEVEOL,
    )


def _kaneko_source(name: str, language: str, sha256: str, caveat: str) -> DatasetSource:
    """Kaneko et al. (2022)'s hand-translated gender pairs of CrowS-Pairs in `language` (a file `<language>.json`)."""
    return DatasetSource(
        name=name,
        title=f"{language.title()} CrowS-Pairs, gender (262 pairs)",
        file_name=f"{language}.json",
        url=f"{_KANEKO_ML}{language}.json",
        sha256=sha256,
        license="MIT (a translation of CrowS-Pairs, CC BY-SA 4.0)",
        homepage="https://github.com/kanekomasahiro/bias_eval_in_multiple_mlm",
        caveat=f"Hand-translated gender pairs of CrowS-Pairs{caveat} Score it with a {language.title()} or multilingual model. {_BLODGETT}.",
        citation=_KANEKO_NAACL,
        folder_hints=("translated",),
    )


DATASETS.update(
    {
        "crows-pairs-revised": _neveol_source(
            "crows-pairs-revised",
            "CrowS-Pairs revised (English, 1,467 pairs)",
            "crows_pairs_EN_revised.csv",
            "1f28318b4ce7a940cf48ffaad0b00796a2163556ed585a144b9ed42aeeff6764",
            "Névéol et al. (2022) corrected CrowS-Pairs and removed 41 pairs flagged during translation; pair ids are CrowS-Pairs' row numbers.",
        ),
        "crows-pairs-revised-210": _neveol_source(
            "crows-pairs-revised-210",
            "CrowS-Pairs revised + 210 (English, 1,677 pairs)",
            "crows_pairs_EN_revised+210.csv",
            "c2c449a051ae93a61dae7a882c7a3efdfce04215c492ed2365d01c0861cecafe",
            "The revised English CrowS-Pairs plus 210 pairs translated from native French contributions (source ids LA0-LA209, pair ids 1508-1717).",
        ),
        "crows-pairs-fr": _neveol_source(
            "crows-pairs-fr",
            "French CrowS-Pairs (1,467 pairs)",
            "crows_pairs_FR.csv",
            "c22724becd2da955ca61cbf6cad802e65af3be1e43c2335b5d205414903692a3",
            "A French adaptation of CrowS-Pairs: score it with a French or multilingual model. Pair ids are the English rows'.",
        ),
        "crows-pairs-ja": _kaneko_source(
            "crows-pairs-ja", "japanese", "711522cd8939a0ca5660bff0a1d1aa7993611e747bfe512a1ae39465fa277e5d", "; pair ids are positions in the file."
        ),
        "crows-pairs-ru": _kaneko_source(
            "crows-pairs-ru",
            "russian",
            "1868e02a6088b8a6e8360b51c42e0c916a356879185df4b79108e3f453e8441c",
            " (text tokenised, spaces before punctuation); pair ids are positions in the file.",
        ),
        "winoqueer": DatasetSource(
            name="winoqueer",
            title="WinoQueer v0 (5,872 pairs)",
            file_name="winoqueer_benchmark.csv",
            url="https://raw.githubusercontent.com/katyfelkner/winoqueer-v0/f116ae77cb2566d0f95b78be6206fa3c6ab0f876/winoqueer_benchmark.csv",
            sha256="70e993554d0b08276a4b6053885afcd95d3fcda1eef2e2bbd46e9f6a0a1b76eb",
            license="MIT",
            homepage="https://github.com/katyfelkner/winoqueer-v0",
            caveat="Anti-LGBTQ+ stereotypes built from templates (many pairs repeat); the v0 benchmark, not the 2023 release.",
            citation="Virginia K. Felkner, Ho-Chun Herbert Chang, Eugene Jang, Jonathan May (2022). Towards WinoQueer: "
            "Developing a Benchmark for Anti-Queer Bias in Large Language Models. QueerInAI @ NAACL 2022.",
        ),
    }
)
_ALIASES.update(
    {
        "crows-pairs-en-revised": "crows-pairs-revised",
        "crows-pairs-revised+210": "crows-pairs-revised-210",
        "crows-pairs-french": "crows-pairs-fr",
        "crows-pairs-japanese": "crows-pairs-ja",
        "crows-pairs-russian": "crows-pairs-ru",
        "wq": "winoqueer",
    }
)


def _name_for(path: Path, default: str) -> str:
    """The dataset key whose usual file name `path` has, else `default`."""
    return next((k for k, source in DATASETS.items() if source.file_name == path.name), default)


def _published_note(key: str, path: Path, sha256: str) -> list[str]:
    expected = DATASETS[key].sha256 if key in DATASETS else None
    if not expected or sha256 == expected:
        return []
    return [
        f"{path.name} is not the published {DATASETS[key].title} file (sha256 {sha256[:12]}…, expected {expected[:12]}…): it may be a modified copy."
    ]


class _Quirks:
    """Oddities found while reading, each kind counted with its pair ids, reported as notes."""

    def __init__(self) -> None:
        self.items: dict[str, list[str]] = {}

    def add(self, kind: str, pair_id: int | str) -> None:
        ids = self.items.setdefault(kind, [])
        if str(pair_id) not in ids:
            ids.append(str(pair_id))

    def notes(self) -> list[str]:
        return [f"{kind}: pair ids {', '.join(ids[:10])}{', …' if len(ids) > 10 else ''} ({len(ids):,})" for kind, ids in self.items.items()]


def _trimmed(value: str, quirks: _Quirks, pair_id: int, where: str) -> str:
    if value != value.strip():
        quirks.add(f"spaces around the {where} removed", pair_id)
    return value.strip()


def _bias_type(value: str, known: tuple[str, ...], quirks: _Quirks, pair_id: int) -> str:
    """A known bias type as written; a case variant lower-cased; anything else is unknown ("") and reported."""
    value = value.strip()
    if value in known or not value:
        return value
    if value.lower() in known:
        quirks.add(f"bias_type written with capitals, read as lower case ({value!r})", pair_id)
        return value.lower()
    quirks.add(f"bias_type {value!r} is not a bias type of this dataset (left unknown)", pair_id)
    return ""


def _revised_id(path: Path, value: str, line: int) -> tuple[int, str]:
    """(pair_id, source_id): CrowS-Pairs row numbers are the pair ids; "LA<k>" (the +210 pairs) become 1508 + k."""
    value = value.strip()
    if value.isdigit():
        return int(value), ""
    if value.startswith("LA") and value[2:].isdigit():
        return 1508 + int(value[2:]), value
    raise DatasetError(f"id {value!r} is neither a CrowS-Pairs row number nor LA<number> (line {line})", path=str(path))


def _revised(path: Path, text: str, sha256: str, name: str | None = None) -> PairDataset:
    """Névéol et al.'s tab-separated files: <id>, sent_more, sent_less, stereo_antistereo, bias_type (no quoting)."""
    key = name or _name_for(path, "custom")
    lines = text.split("\n")
    header_at = next(i for i, line in enumerate(lines) if line.strip())
    header = [h.strip() for h in lines[header_at].rstrip("\r").split("\t")]
    _check_header(path, header, ("sent_more", "sent_less", "stereo_antistereo", "bias_type"), " tab-separated")
    pairs: list[Pair] = []
    quirks = _Quirks()
    seen: dict[int, int] = {}
    for index in range(header_at + 1, len(lines)):
        line = lines[index].rstrip("\r")
        if not line.strip():
            continue
        fields = line.split("\t")
        number = len(pairs) + 1
        if len(fields) != len(header):
            raise DatasetError(
                f"{len(fields)} tab-separated fields where the header has {len(header)} (line {index + 1})", path=str(path), row=number
            )
        values = dict(zip(header, fields))
        pair_id, source_id = _revised_id(path, values.get(header[0], ""), index + 1) if header[0] == "" or header[0] == "id" else (number - 1, "")
        if pair_id in seen:
            raise DatasetError(f"id {pair_id} appears twice (lines {seen[pair_id]} and {index + 1})", path=str(path), row=number)
        seen[pair_id] = index + 1
        row = _Row(number, index + 1, values)
        empty = [c for c in ("sent_more", "sent_less") if _sentence(values[c]) is None]
        if empty:
            quirks.add(f"skipped: {' and '.join(empty)} empty in the source", source_id or pair_id)
            continue
        sentences = [_trimmed(values[c], quirks, pair_id, "sentences") for c in ("sent_more", "sent_less")]
        pairs.append(
            Pair(
                pair_id=pair_id,
                dataset=key,
                bias_type=_bias_type(values["bias_type"], _REVISED_BIAS_TYPES, quirks, pair_id),
                direction=_csv_direction(path, row, optional=False),
                sent_stereo=sentences[0],
                sent_anti=sentences[1],
                source_id=source_id,
            )
        )
    if not pairs:
        raise DatasetError("no data rows", path=str(path))
    notes = _published_note(key, path, sha256) + quirks.notes() + _duplicate_notes(pairs)
    return PairDataset(key, path, sha256, tuple(pairs), tuple(notes))


def _translated(path: Path, text: str, sha256: str, name: str | None = None) -> PairDataset:
    """Kaneko et al.'s translated CrowS-Pairs: a JSON array of {stereotype, anti-stereotype, direction, bias_type, bias_score}."""
    key = name or _name_for(path, "custom")
    document = parse_json_document(path, text)
    if not isinstance(document, list):
        raise DatasetError('expected a JSON array of {"stereotype": ..., "anti-stereotype": ..., "direction": ...} objects', path=str(path))
    pairs: list[Pair] = []
    quirks = _Quirks()
    for pair_id, item in enumerate(document):
        if not isinstance(item, dict):
            raise DatasetError(f"item {pair_id} is not a JSON object", path=str(path), row=pair_id + 1)
        sentences = []
        for label in ("stereotype", "anti-stereotype"):
            sentence = _sentence(item.get(label))
            if sentence is None:
                raise DatasetError(f"item {pair_id}: missing or empty {label} sentence", path=str(path), row=pair_id + 1)
            sentences.append(_trimmed(sentence, quirks, pair_id, "sentences"))
        direction = _text(item.get("direction")).strip()
        if direction not in _GROUPS:
            raise DatasetError(f"item {pair_id}: direction is {direction!r}, expected stereo or antistereo", path=str(path), row=pair_id + 1)
        pairs.append(
            Pair(
                pair_id=pair_id,
                dataset=key,
                bias_type=_bias_type(_text(item.get("bias_type")), CROWS_PAIRS_BIAS_TYPES, quirks, pair_id),
                direction=direction,
                sent_stereo=sentences[0],
                sent_anti=sentences[1],
            )
        )
    if not pairs:
        raise DatasetError("no pairs in the JSON array", path=str(path))
    notes = _published_note(key, path, sha256) + quirks.notes() + _duplicate_notes(pairs)
    return PairDataset(key, path, sha256, tuple(pairs), tuple(notes))


_WINOQUEER_DIRECTION = ("stereo_antistero", "stereo_antistereo")  # v0's header is misspelt; the right spelling is accepted too


def _winoqueer(path: Path, text: str, sha256: str, name: str | None = None) -> PairDataset:
    """WinoQueer v0: CrowS-Pairs-like CSV, header `stereo_antistero` [sic], values often with a leading space."""
    key = name or "winoqueer"
    header = _csv_header(text)
    column = next((c for c in _WINOQUEER_DIRECTION if c in header), None)
    if column is None:
        raise DatasetError("missing column stereo_antistero (or stereo_antistereo)", path=str(path))
    quirks = _Quirks()
    pairs: list[Pair] = []
    for row in _csv_rows(path, text, ("sent_more", "sent_less", column, "bias_type")):
        pair_id = row.number - 1
        direction = row.values[column].strip()
        if direction != row.values[column]:
            quirks.add("spaces around stereo_antistero removed", pair_id)
        if direction not in _GROUPS:
            raise row.error(path, f"{column} is {row.values[column]!r}, expected stereo or antistereo")
        bias_type = row.values["bias_type"]
        if bias_type != bias_type.strip():
            quirks.add("spaces around bias_type removed", pair_id)
        pairs.append(
            Pair(
                pair_id=pair_id,
                dataset=key,
                bias_type=bias_type.strip(),
                direction=direction,
                sent_stereo=_trimmed(_csv_sentence(path, row, "sent_more"), quirks, pair_id, "sentences"),
                sent_anti=_trimmed(_csv_sentence(path, row, "sent_less"), quirks, pair_id, "sentences"),
            )
        )
    notes = _published_note(key, path, sha256)
    if column == "stereo_antistero":
        notes.append("the direction column is spelt stereo_antistero in the source (read as stereo_antistereo)")
    notes += quirks.notes() + _duplicate_notes(pairs)
    return PairDataset(key, path, sha256, tuple(pairs), tuple(notes))


def _newer_format(path: Path, text: str, sha256: str) -> PairDataset | None:
    """A revised (tab-separated) or translated (JSON array) CrowS-Pairs file or WinoQueer, recognised by content; else None."""
    stripped = text.lstrip("\ufeff \t\r\n")
    if stripped.startswith("["):
        return _translated(path, text, sha256)
    first = stripped.split("\n", 1)[0]
    if "\t" in first and {"sent_more", "sent_less"} <= {h.strip() for h in first.split("\t")}:
        return _revised(path, text, sha256)
    if "stereo_antistero" in _csv_header(text):
        return _winoqueer(path, text, sha256)
    return None


def read_crows_pairs_revised(path: str | Path, name: str | None = None) -> PairDataset:
    """Névéol et al. (2022)'s revised English, "+210" and French CrowS-Pairs (tab-separated; ids are CrowS-Pairs row numbers).

    Bad bias_type values are reported in `notes` (a capitalised one is lower-cased, others left unknown); "LA<k>" ids
    of the +210 pairs become pair ids 1508 + k, the original kept in `source_id`.
    """
    path = Path(path)
    return _revised(path, *read_text(path), name=name)


def read_translated_crows_pairs(path: str | Path, name: str | None = None) -> PairDataset:
    """Kaneko et al. (2022)'s Japanese or Russian CrowS-Pairs gender pairs (JSON array); pair ids are positions."""
    path = Path(path)
    return _translated(path, *read_text(path), name=name)


def read_winoqueer(path: str | Path) -> PairDataset:
    """WinoQueer v0's benchmark CSV; spaces around values are removed and reported in `notes`."""
    path = Path(path)
    return _winoqueer(path, *read_text(path))


_READERS.update(
    {
        "crows-pairs-revised": lambda p: read_crows_pairs_revised(p, "crows-pairs-revised"),
        "crows-pairs-revised-210": lambda p: read_crows_pairs_revised(p, "crows-pairs-revised-210"),
        "crows-pairs-fr": lambda p: read_crows_pairs_revised(p, "crows-pairs-fr"),
        "crows-pairs-ja": lambda p: read_translated_crows_pairs(p, "crows-pairs-ja"),
        "crows-pairs-ru": lambda p: read_translated_crows_pairs(p, "crows-pairs-ru"),
        "winoqueer": read_winoqueer,
    }
)

__all__ = [
    "DATASETS",
    "DatasetSource",
    "Pair",
    "PairDataset",
    "Progress",
    "canonical_name",
    "default_cache_dir",
    "load_dataset",
    "locate_dataset",
    "locate_source",
    "read_crows_pairs",
    "read_crows_pairs_revised",
    "read_custom_pairs",
    "read_pairs_file",
    "read_stereoset",
    "read_translated_crows_pairs",
    "read_winoqueer",
]
