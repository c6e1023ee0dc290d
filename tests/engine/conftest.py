"""Fixtures of the engine tests: the tiny models with the real tokenizers in ../shared, and one inspected pair."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support import FAMILIES, REAL_TOKENIZERS, TOKENIZERS


@pytest.fixture(scope="session")
def real_model_dirs(tmp_path_factory) -> dict[str, Path]:
    """The same tiny random models with the real tokenizers in ../shared/tokenizers (tests marked `shared`)."""
    if not TOKENIZERS.is_dir():
        pytest.skip(f"{TOKENIZERS} is not available")
    from biaslens.engine.testing import build_random_model

    root = tmp_path_factory.mktemp("real-models")
    return {family: build_random_model(family, TOKENIZERS / tok, root / family) for family, tok in REAL_TOKENIZERS.items()}


@pytest.fixture(scope="session")
def real_models(real_model_dirs):
    from biaslens.engine.models import load_model

    return {family: load_model(str(path)) for family, path in real_model_dirs.items()}


@pytest.fixture(params=FAMILIES)
def any_real_model(request, real_models):
    """Each family with its real tokenizer from ../shared (for tests marked `shared`)."""
    return real_models[request.param]


@pytest.fixture(scope="module")
def pair_inspection(tiny_bert):
    """One pair whose modified spans differ in length, inspected with every additive metric and attention matrices."""
    from biaslens.engine.evaluation import inspect_pair
    from tests.engine.explore_cases import ADDITIVE, PAIR

    return inspect_pair(tiny_bert, *PAIR, metrics=ADDITIVE, attention_matrices=True)
