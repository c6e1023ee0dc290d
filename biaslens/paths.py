"""Where biaslens keeps its files on a user's machine."""

from __future__ import annotations

import os
from pathlib import Path


def default_cache_dir() -> Path:
    """$BIASLENS_CACHE_DIR, else $XDG_CACHE_HOME/biaslens, else ~/.cache/biaslens."""
    explicit = os.environ.get("BIASLENS_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "biaslens"
