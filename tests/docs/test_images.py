"""The docs' images are screenshots the browser tests take (scripts/docs_screenshots.sh), never made by hand."""

from __future__ import annotations

import ast
import re

from tests.docs.test_examples import DOCS
from tests.support import REPO

IMAGES = REPO / "docs" / "images"
SCRIPT = REPO / "scripts" / "docs_screenshots.sh"
MAX_BYTES = 300_000
PNG = b"\x89PNG\r\n\x1a\n"
LINK = re.compile(r"!\[[^\]]*\]\(([^)\s]*)")


def shown() -> dict[str, list[str]]:
    """Image name -> the pages showing it, for every `![...](...)` of the docs; anything else than images/<name>.png fails."""
    names: dict[str, list[str]] = {}
    for path in DOCS:
        text = path.read_text(encoding="utf-8")
        assert "<img" not in text, f"{path.name}: an <img> tag; show a screenshot as ![what](images/<name>.png)"
        prefix = "docs/images/" if path.name == "README.md" else "../" * (len(path.relative_to(REPO / "docs").parts) - 1) + "images/"
        for target in LINK.findall(text):
            assert target.startswith(prefix) and target.endswith(".png"), f"{path.name}: {target} is not {prefix}<name>.png"
            names.setdefault(target[len(prefix) : -len(".png")], []).append(path.name)
    return names


def screenshots() -> dict[str, re.Pattern[str]]:
    """`<file>::<test>` -> the names its `screenshot(page, name)` calls write (an f-string's fields match anything)."""
    taken: dict[str, list[str]] = {}
    for path in sorted((REPO / "tests" / "browser").glob("test_*.py")):
        for func in ast.parse(path.read_text(encoding="utf-8")).body:
            if not isinstance(func, ast.FunctionDef):
                continue
            for call in ast.walk(func):
                if isinstance(call, ast.Call) and getattr(call.func, "id", None) == "screenshot" and len(call.args) == 2:
                    name = call.args[1]
                    parts = name.values if isinstance(name, ast.JoinedStr) else [name]
                    pattern = "".join(re.escape(p.value) if isinstance(p, ast.Constant) else ".+" for p in parts)
                    taken.setdefault(f"{path.relative_to(REPO).as_posix()}::{func.name}", []).append(pattern)
    return {test: re.compile("|".join(f"(?:{p})" for p in patterns)) for test, patterns in taken.items()}


def test_every_image_the_docs_show_is_a_screenshot_of_a_browser_test_the_script_runs():
    names = shown()
    assert "inspector" in names and "README.md" in names["inspector"], names  # the README shows the app
    taken = screenshots()
    assert "tests/browser/test_pages.py::test_picking_a_crows_pairs_pair_shows_its_tokens" in taken  # the AST reading works
    script = SCRIPT.read_text(encoding="utf-8")
    run = [test for test in taken if f'"{test}"' in script]
    for name, pages in names.items():
        path = IMAGES / f"{name}.png"
        assert path.is_file(), f"{path} (shown in {pages}) is missing: run bash scripts/docs_screenshots.sh"
        assert path.read_bytes()[:8] == PNG and path.stat().st_size < MAX_BYTES, f"{path}: not a PNG under {MAX_BYTES} bytes"
        assert any(taken[test].fullmatch(name) for test in run), (
            f"images/{name}.png: no browser test listed in {SCRIPT.name} takes screenshot(page, {name!r})"
        )


def test_docs_images_holds_only_images_the_docs_show():
    names = shown()
    extra = sorted(p.name for p in IMAGES.iterdir() if p.stem not in names or p.suffix != ".png") if IMAGES.is_dir() else []
    assert not extra, f"docs/images holds images no page shows: {extra}"
