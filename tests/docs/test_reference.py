"""The API reference documents every public name (`from biaslens import …`), through the names the package's static
imports give it (what mkdocstrings reads), which match the lazy imports it makes at run time."""

from __future__ import annotations

import ast
import re

import biaslens
from tests.support import REPO


def static_imports() -> dict[str, str]:
    """Name -> module of the `if TYPE_CHECKING:` imports of biaslens/__init__.py."""
    tree = ast.parse((REPO / "biaslens" / "__init__.py").read_text(encoding="utf-8"))
    block = next(n for n in tree.body if isinstance(n, ast.If) and getattr(n.test, "id", None) == "TYPE_CHECKING")
    return {alias.asname or alias.name: node.module or "" for node in block.body if isinstance(node, ast.ImportFrom) for alias in node.names}


def test_the_static_imports_are_the_lazy_ones():
    assert static_imports() == biaslens._EXPORTS


def test_the_reference_documents_every_public_name_by_its_public_path():
    text = "".join(p.read_text(encoding="utf-8") for p in sorted((REPO / "docs" / "reference").glob("*.md")))
    documented = re.findall(r"^::: (\S+)$", text, re.M)
    assert sorted(documented) == sorted(f"biaslens.{name}" for name in biaslens.__all__)
