"""Fixtures every test package shares: the `shared` marker, an isolated cache, and tiny random-weight models.

The models use tiny tokenizers built in the suite (tests/support/tiny_tokenizers.py), so they
need nothing beside the checkout. Each package adds its own in its conftest: tests/engine (the
same models with the real tokenizers in ../shared), tests/app (the app's environment for
AppTest), tests/browser (the app served to headless Chromium).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.support import FAMILIES, HAVE_SHARED, SHARED


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
    from biaslens.engine.testing import build_random_model
    from tests.support.tiny_tokenizers import vocab_size

    root = tmp_path_factory.mktemp("models")
    return {
        family: build_random_model(family, folder, root / family, vocab_size=vocab_size(family, folder)) for family, folder in tokenizer_dirs.items()
    }


def _loaded_models(name: str, dirs: str, first: str, first_name: str, what: str) -> tuple[object, object]:
    """Two session fixtures over the model folders of fixture `dirs`: `name`, every model (family -> model) loaded
    through the product's normal path, and `first_name`, the one of family `first`."""

    def models(request):
        from biaslens.engine.models import load_model

        return {family: load_model(str(path)) for family, path in request.getfixturevalue(dirs).items()}

    def one(request):
        return request.getfixturevalue(name)[first]

    models.__doc__ = f"The tiny {what} models loaded through the product's normal path."
    one.__doc__ = f"The tiny {first} model of `{name}`."
    return pytest.fixture(scope="session", name=name)(models), pytest.fixture(scope="session", name=first_name)(one)


tiny_models, tiny_bert = _loaded_models("tiny_models", "model_dirs", "bert-cased", "tiny_bert", "masked")


@pytest.fixture(params=FAMILIES)
def any_model(request, tiny_models):
    """Each family, with its tiny tokenizer."""
    return tiny_models[request.param]


@pytest.fixture(scope="session")
def causal_dirs(tmp_path_factory) -> dict[str, Path]:
    """Tiny random causal LMs of each causal family (GPT-2, Pythia, Llama, Qwen2), tokenizers trained in the suite."""
    from biaslens.engine.testing import CAUSAL_FAMILIES, build_random_causal_model

    root = tmp_path_factory.mktemp("causal")
    return {family: build_random_causal_model(family, None, root / family) for family in CAUSAL_FAMILIES}


tiny_causal, tiny_gpt2 = _loaded_models("tiny_causal", "causal_dirs", "gpt2", "tiny_gpt2", "causal")
