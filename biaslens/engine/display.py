"""How results show themselves in a notebook: a registry of HTML renderers, kept below the layers that draw them.

A result class (`PairInspection`, `EvaluationResult`, `explore.ModelComparison`) inherits `HtmlRepr`, whose
`_repr_html_` asks `render_html`; the figures layer, which draws, fills the registry (`biaslens.figures.notebook`
calls `register`). The engine never imports figures: the package root (`biaslens/__init__.py`, above every layer)
hands this module a `loader` that imports them, and it runs the first time a result is rendered, so `import biaslens`
and a scoring script never load the charting code. With no renderer for a type, `_repr_html_` returns None and
Jupyter shows the plain repr.
"""

from __future__ import annotations

from typing import Any, Callable

_RENDERERS: dict[type, Callable[[Any], str | None]] = {}
_loader: Callable[[], None] | None = None


def register(kind: type, render: Callable[[Any], str | None]) -> None:
    """`render(obj)` draws the instances of `kind` (and of its subclasses) as self-contained HTML (None: it cannot, e.g. a
    table whose columns were removed; Jupyter then shows its plain form)."""
    _RENDERERS[kind] = render


def set_loader(load: Callable[[], None]) -> None:
    """`load()` registers the renderers; it is called once, before the first `render_html`."""
    global _loader
    _loader = load


def render_html(obj: Any) -> str | None:
    """`obj` as HTML by the renderer registered for its class (or its nearest base class), or None if there is none."""
    global _loader
    if _loader is not None:
        load, _loader = _loader, None
        load()
    for kind in type(obj).__mro__:
        if kind in _RENDERERS:
            return _RENDERERS[kind](obj)
    return None


class HtmlRepr:
    """A result that Jupyter draws as HTML (`render_html`)."""

    def _repr_html_(self) -> str | None:
        return render_html(self)


__all__ = ["HtmlRepr", "register", "render_html", "set_loader"]
