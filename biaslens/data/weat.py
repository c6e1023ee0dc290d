"""WEAT stimuli (Caliskan et al. 2017) in SEAT's file format, found locally or downloaded.

Each file (`weat1.jsonl` ... `weat10.jsonl` and SEAT's `b` variants) is one JSON object
with four word sets, `targ1`, `targ2`, `attr1`, `attr2`, each `{"category": ...,
"examples": [...]}`. `load_weat("weat6")` reads the file from a folder the user names
(`data_dir`, else $BIASLENS_DATA_DIR, searched recursively for `weat6.jsonl`), else from
the cache folder, else downloads it from W4ngatang/sent-bias (pinned to one commit and
checked against its sha256) into the cache. Offline with no copy, the error names the
file and where to put it.

The stimuli are CC BY-NC 4.0 (non-commercial), as stated in the sent-bias repository.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from biaslens.data import datafiles
from biaslens.data.datafiles import Progress
from biaslens.data.datasets import parse_json_document
from biaslens.errors import DatasetError, DatasetNotFoundError

#: The sent-bias commit the checksums below belong to.
SENT_BIAS_COMMIT = "e3559fb669ca4832743b42fee715994c15c7f1af"
WEAT_URL = "https://raw.githubusercontent.com/W4ngatang/sent-bias/{commit}/tests/{name}.jsonl"
WEAT_LICENSE = "CC BY-NC 4.0 (W4ngatang/sent-bias): non-commercial use only"
WEAT_CITATION = (
    "Aylin Caliskan, Joanna J. Bryson, Arvind Narayanan (2017). Semantics derived automatically from language corpora "
    "contain human-like biases. Science 356(6334). Files: Chandler May et al. (2019), SEAT, github.com/W4ngatang/sent-bias."
)

#: sha256 of every word-level WEAT file at SENT_BIAS_COMMIT.
WEAT_SHA256 = {
    "weat1": "c12c192a4b8011590cfe7de237cb2e0dbcd0e7328e3b7baf63869ccfd61bc0ea",
    "weat2": "d907a10b5a84a72f4e60bf069562565aa88b0e0c84e26adb38a75536718e25b9",
    "weat3": "99e5fdbfe3749608afb803eb55d1fb291f81399862ba4cc2b21461ae82215bf7",
    "weat3b": "1642a16492fb2e65ff84c858f81ee50737825b96cc0ce880f3409b4dc2e8dd5a",
    "weat4": "c0d0c606d20a0ccb8759dcbddaea1b692a860e9dbeea2ccdcade3e3c25868dbb",
    "weat5": "7e1ac48a1c8b549200ce5e4c9ed7fd6f0c2c766485d04e73adee05358a9b3224",
    "weat5b": "95d5e31bebbe612274fcde0bb311c6fe012f26623522ac4a2b2c9a78ddbb9d2a",
    "weat6": "21681d3f4d7fdf97cf4cd2c0f9160940cfbd797ec62c7621b5600dc9e6e5b248",
    "weat6b": "b6c85b5228a3786827b528af3d633fbbddc4fbf05d93e6ceb6f76a4881386c1d",
    "weat7": "c7e68ec95e30f42df3faa9e1ba933596c9e49651e0017bb90c19d0f58312f2b0",
    "weat7b": "714c42ccf6ec71113fcb2064daa7b4dfc80b0cd4bb191c8d0196053681a9792b",
    "weat8": "86e650b44e8fd539a9082564f5ede5dae2ed67d120938b9c92a7495f143801e9",
    "weat8b": "db822460372ae472b8cf8fd41a44ca13e4f166bb9ee05ea13a983fe0301016ef",
    "weat9": "e4c9ab7cd719dcc05a2bd86c390de31ae2778db3c362b360206c0491751fe9f7",
    "weat10": "4878efc95d1bbb9c482fc90a5c2c379f9b5a990c7ea9e61f13611fff355a23bc",
}

_SETS = ("targ1", "targ2", "attr1", "attr2")


@dataclass(frozen=True)
class WordSet:
    """One named list of stimuli, e.g. Career: executive, management, ..."""

    category: str
    words: tuple[str, ...]


@dataclass(frozen=True)
class WeatStimuli:
    """The four word sets of one WEAT file."""

    name: str  # "weat6"
    path: Path
    sha256: str
    targ1: WordSet
    targ2: WordSet
    attr1: WordSet
    attr2: WordSet


def _word_set(path: Path, document: dict, key: str) -> WordSet:
    block = document.get(key)
    category = block.get("category") if isinstance(block, dict) else None
    examples = block.get("examples") if isinstance(block, dict) else None
    if not isinstance(category, str) or not isinstance(examples, list) or not examples:
        raise DatasetError(f'{key} must be {{"category": "...", "examples": ["word", ...]}} with at least one word', path=str(path))
    words = []
    for word in examples:
        if not isinstance(word, str) or not word.strip():
            raise DatasetError(f"{key} ({category}) holds {word!r}, expected non-empty words", path=str(path))
        words.append(word.strip())
    return WordSet(category, tuple(words))


def read_weat_file(path: str | Path) -> WeatStimuli:
    """A WEAT file in SEAT's format: one JSON object with targ1, targ2, attr1, attr2."""
    path = Path(path)
    text, sha256 = datafiles.read_text(path)
    document = parse_json_document(path, text)
    if not isinstance(document, dict):
        raise DatasetError("expected one JSON object with targ1, targ2, attr1, attr2 (SEAT's format)", path=str(path))
    sets = [_word_set(path, document, key) for key in _SETS]
    return WeatStimuli(path.name.removesuffix(".jsonl"), path, sha256, *sets)


def _check_name(name: str) -> str:
    key = name.strip().lower().removesuffix(".jsonl")
    if key not in WEAT_SHA256:
        raise DatasetError(f"no WEAT test named {name!r}; known: {', '.join(WEAT_SHA256)}")
    return key


def weat_url(name: str) -> str:
    return WEAT_URL.format(commit=SENT_BIAS_COMMIT, name=_check_name(name))


def locate_weat(name: str, *, data_dir: str | Path | None = None, cache_dir: str | Path | None = None) -> Path | None:
    """Where `<name>.jsonl` is on this machine: under the data folder (recursively), else in the cache."""
    return datafiles.locate("weat", [f"{_check_name(name)}.jsonl"], data_dir=data_dir, cache_dir=cache_dir)


def _not_found(key: str, cache_dir: str | Path | None, why: str) -> str:
    return (
        f"WEAT stimuli {key}.jsonl not found and {why}. Download it from {weat_url(key)} and put it in "
        f"{datafiles.cache_folder('weat', cache_dir)}/, or pass --data-dir DIR / set BIASLENS_DATA_DIR to a folder that contains it."
    )


def load_weat(
    name: str,
    *,
    data_dir: str | Path | None = None,
    cache_dir: str | Path | None = None,
    download: bool = True,
    progress: Progress | None = None,
) -> WeatStimuli:
    """The stimuli of one WEAT test ("weat1" ... "weat10", "weat3b", ...): local copy, else download."""
    key = _check_name(name)
    found = locate_weat(key, data_dir=data_dir, cache_dir=cache_dir)
    if found is not None:
        return read_weat_file(found)
    if not download:
        raise DatasetNotFoundError(_not_found(key, cache_dir, "downloads are switched off"))
    return _download(key, cache_dir, progress)


def _download(key: str, cache_dir: str | Path | None, progress: Progress | None) -> WeatStimuli:
    """Fetch into the cache; the file appears there only once complete, verified and readable."""
    target = datafiles.download(
        weat_url(key),
        datafiles.cache_folder("weat", cache_dir) / f"{key}.jsonl",
        sha256=WEAT_SHA256[key],
        not_found=lambda why: _not_found(key, cache_dir, why),
        check=read_weat_file,
        progress=progress,
    )
    return read_weat_file(target)


__all__ = [
    "SENT_BIAS_COMMIT",
    "WEAT_CITATION",
    "WEAT_LICENSE",
    "WEAT_SHA256",
    "WeatStimuli",
    "WordSet",
    "load_weat",
    "locate_weat",
    "read_weat_file",
    "weat_url",
]
