"""Fixtures every test package shares: an isolated cache, and tiny random-weight models.

The models use tiny tokenizers built in the suite (tests/support/tiny_tokenizers.py), so they
need nothing beside the checkout; `real_model_dirs` builds the same models with the real
tokenizers in ../shared for the tests marked `shared`.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.support import FAMILIES, HAVE_SHARED, REAL_TOKENIZERS, SHARED, TOKENIZERS


def pytest_configure(config):
    if os.environ.get("BIASLENS_REQUIRE_SHARED") == "1" and not HAVE_SHARED:
        raise pytest.UsageError(f"BIASLENS_REQUIRE_SHARED=1 but {SHARED} is not a folder (set BIASLENS_SHARED to where it is)")


def pytest_collection_modifyitems(config, items):
    """Tests marked `shared` are skipped, with the reason, where ../shared is missing."""
    if HAVE_SHARED:
        return
    skip = pytest.mark.skip(reason=f"needs the real files in {SHARED} (not beside this checkout; set BIASLENS_SHARED)")
    for item in items:
        if "shared" in item.keywords:
            item.add_marker(skip)


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
def tokenizer_dirs(tmp_path_factory) -> dict[str, Path]:
    """Tiny tokenizer folders, one per family, in the layout of ../shared/tokenizers/<model>/."""
    from tests.support.tiny_tokenizers import build_tiny_tokenizers

    return build_tiny_tokenizers(tmp_path_factory.mktemp("tokenizers"))


@pytest.fixture(scope="session")
def model_dirs(tmp_path_factory, tokenizer_dirs) -> dict[str, Path]:
    """Tiny random BERT (cased), RoBERTa and ALBERT folders with tiny tokenizers, saved with save_pretrained."""
    from biaslens.testing import build_random_model
    from tests.support.tiny_tokenizers import vocab_size

    root = tmp_path_factory.mktemp("models")
    return {
        family: build_random_model(family, folder, root / family, vocab_size=vocab_size(family, folder))
        for family, folder in tokenizer_dirs.items()
    }


@pytest.fixture(scope="session")
def real_model_dirs(tmp_path_factory) -> dict[str, Path]:
    """The same tiny random models with the real tokenizers in ../shared/tokenizers (tests marked `shared`)."""
    if not TOKENIZERS.is_dir():
        pytest.skip(f"{TOKENIZERS} is not available")
    from biaslens.testing import build_random_model

    root = tmp_path_factory.mktemp("real-models")
    return {family: build_random_model(family, TOKENIZERS / tok, root / family) for family, tok in REAL_TOKENIZERS.items()}


@pytest.fixture(scope="session")
def tiny_models(model_dirs):
    """The tiny models loaded through the product's normal path."""
    from biaslens.models import load_model

    return {family: load_model(str(path)) for family, path in model_dirs.items()}


@pytest.fixture(scope="session")
def real_models(real_model_dirs):
    from biaslens.models import load_model

    return {family: load_model(str(path)) for family, path in real_model_dirs.items()}


@pytest.fixture(scope="session")
def tiny_bert(tiny_models):
    return tiny_models["bert-cased"]


@pytest.fixture(params=FAMILIES)
def any_model(request, tiny_models):
    """Each family, with its tiny tokenizer."""
    return tiny_models[request.param]


@pytest.fixture(params=FAMILIES)
def any_real_model(request, real_models):
    """Each family with its real tokenizer from ../shared (for tests marked `shared`)."""
    return real_models[request.param]


@pytest.fixture
def app_env(monkeypatch, model_dirs, tmp_path) -> dict[str, str]:
    """Point the app at the tiny BERT, the hand-written fixture datasets and a fresh result cache."""
    import ui.resources
    from tests.support import FIXTURE_DATA
    from tests.support.app import as_a_running_server

    env = {
        "BIASLENS_MODEL": str(model_dirs["bert-cased"]),
        "BIASLENS_DATA_DIR": str(FIXTURE_DATA),
        "BIASLENS_CACHE_DIR": str(tmp_path / "cache"),
        "BIASLENS_MODEL_DIRS": str(model_dirs["bert-cased"].parent),  # every tiny model (the app refuses other folders)
    }
    for key in ("BIASLENS_MAX_TOKENS", "BIASLENS_MAX_UPLOAD_ROWS", "BIASLENS_MAX_MODELS"):
        monkeypatch.delenv(key, raising=False)  # the server's defaults, whatever the developer's shell says
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    ui.resources.result_cache.clear()  # the shared ResultCache follows BIASLENS_CACHE_DIR
    ui.resources._failures().entries.clear()
    as_a_running_server(monkeypatch)
    yield env
    ui.resources.result_cache.clear()
