"""Fixtures of the app tests (AppTest): the environment a page runs in."""

from __future__ import annotations

import pytest


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
