"""Text reaches the page escaped by construction: a static check of every page and helper (issue 21, journey 9).

Streamlit renders the text of `st.markdown`, `st.caption`, `st.subheader`, `st.info`, … and of widget labels and
help as markdown. A value from a link, a file, a model or a user (a model name, a revision, a bias type, a lab
group's label, a sentence, a file name, an engine message quoting them) must go through `ui.feedback.md` (or
`code`, or come from `explain`, which escapes), or a crafted value becomes a live link, an image or red text in
every visitor's page.

The check reads `pages/` and `ui/` (no app run) and refuses a text call whose text is built from an f-string,
`+`, `.format` or `.join` with a value that is none of: escaped (`md`, `code`, `explain`), a number (a numeric
format spec such as `:.2f`, `:,` or `:d`, or `len`/`int`/`round`/`float`/`abs`), a constant of the code
(a literal, or an expression rooted in an UPPER_CASE name: `METRICS[key].name`, `lab.EXPECTED_TEXT[...]`), or a
local variable assigned only such values. A whole argument that is a plain variable is refused only if the same
function builds it unsafely (`label = f"{pair.bias_type}"; st.subheader(label)`).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support import REPO

#: Calls whose first argument (or `body` / `label`) Streamlit renders as markdown, on `st` or any container.
TEXT_CALLS = {
    "markdown", "caption", "title", "header", "subheader", "info", "warning", "error", "success", "write", "toast",
    "expander", "popover", "metric", "spinner", "button", "download_button", "link_button", "form_submit_button",
    "checkbox", "toggle", "radio", "selectbox", "multiselect", "text_input", "text_area", "number_input", "slider",
    "select_slider", "file_uploader", "segmented_control", "pills",
}  # fmt: skip
#: Keyword arguments rendered as markdown in any call.
TEXT_KEYWORDS = {"help", "body", "label"}
#: Functions whose result is escaped markdown (ui/feedback.py).
ESCAPING = {"md", "code", "explain"}
#: Functions whose result is a number (written out: `biaslens.figures.formatting.format_margin`).
NUMERIC = {"len", "int", "round", "float", "abs", "format_margin"}
#: A format spec that writes a number (a string would raise with it).
NUMERIC_SPEC = re.compile(r"^.*(,|_|[bcdeEfFgGnoxX%])$")

FILES = sorted([*(REPO / "pages").glob("*.py"), *(REPO / "ui").glob("*.py")])


def _is_constant_name(name: str) -> bool:
    return name.isupper() or (name.upper() == name and any(c.isalpha() for c in name))


def _escaping_call(node: ast.AST) -> bool:
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    if isinstance(func, ast.Name):
        return func.id in ESCAPING
    return isinstance(func, ast.Attribute) and func.attr in ESCAPING and ast.unparse(func.value).split(".")[-1] == "feedback"


class Element(ast.expr):
    """What a loop or comprehension variable holds: an element of `iterable`."""

    def __init__(self, iterable: ast.AST):
        super().__init__()
        self.iterable = iterable


@dataclass
class Scope:
    """Assignments of the function (or module) a call is in: name -> the values assigned to it (None: not knowable)."""

    assigned: dict[str, list[ast.AST | None]]

    @classmethod
    def of(cls, body: ast.AST) -> Scope:
        assigned: dict[str, list[ast.AST | None]] = {}

        def target(t: ast.AST, value: ast.AST | None) -> None:
            if isinstance(t, ast.Name):
                assigned.setdefault(t.id, []).append(value)
            elif isinstance(t, (ast.Tuple, ast.List)):
                for element in t.elts:  # unpacking: safe only if the whole value is (e.g. `message, hint = explain(exc)`)
                    target(element, value if value is not None and _escaping_call(value) else None)

        for node in ast.walk(body):
            if isinstance(node, ast.Assign):
                for t in node.targets:
                    target(t, node.value)
            elif isinstance(node, (ast.AnnAssign, ast.AugAssign)) and node.value is not None:
                target(node.target, node.value)
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("append", "extend", "insert")
                and isinstance(node.func.value, ast.Name)
                and node.args
            ):  # a list of lines grows: what is added counts as assigned
                added = node.args[-1]
                target(node.func.value, ast.List(elts=[added]) if node.func.attr != "extend" else added)
            elif isinstance(node, (ast.For, ast.comprehension)):
                target(node.target, Element(node.iter) if isinstance(node.target, ast.Name) else None)
            elif isinstance(node, ast.NamedExpr):
                target(node.target, node.value)
            elif isinstance(node, (ast.With, ast.AsyncWith)):
                for item in node.items:
                    if item.optional_vars is not None:
                        target(item.optional_vars, None)
        if isinstance(body, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            for arg in [*body.args.posonlyargs, *body.args.args, *body.args.kwonlyargs]:
                assigned.setdefault(arg.arg, []).append(None)
        return cls(assigned)


class Checker:
    def __init__(self, scope: Scope):
        self.scope = scope
        self.seen: set[str] = set()

    def safe_value(self, node: ast.AST | None) -> bool:
        """A value put into markdown text: escaped, a number, a constant of the code, or text built from such values."""
        if node is None:
            return False
        if isinstance(node, Element):
            return self.safe_iterable(node.iterable)
        if isinstance(node, ast.Constant):
            return True
        if isinstance(node, ast.JoinedStr):
            return all(self.safe_value(v) for v in node.values)
        if isinstance(node, ast.FormattedValue):
            spec = ast.unparse(node.format_spec)[2:-1] if node.format_spec is not None else ""
            return bool(NUMERIC_SPEC.match(spec)) and node.conversion == -1 or self.safe_value(node.value)
        if _escaping_call(node) or (isinstance(node, ast.Subscript) and _escaping_call(node.value)):
            return True
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in NUMERIC:
            return True
        if isinstance(node, ast.IfExp):
            return self.safe_value(node.body) and self.safe_value(node.orelse)
        if isinstance(node, ast.BinOp):
            return self.safe_value(node.left) and self.safe_value(node.right)
        if isinstance(node, ast.BoolOp):
            return all(self.safe_value(v) for v in node.values)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("join", "format"):
            receiver_ok = self.safe_value(node.func.value)
            parts = [*node.args, *(k.value for k in node.keywords)]
            return receiver_ok and all(self.safe_iterable(p) if node.func.attr == "join" else self.safe_value(p) for p in parts)
        if self.constant_of_code(node):
            return True
        if isinstance(node, ast.Name):
            return self.safe_name(node.id)
        return False

    def safe_iterable(self, node: ast.AST) -> bool:
        if isinstance(node, (ast.GeneratorExp, ast.ListComp, ast.SetComp)):
            return self.safe_value(node.elt)
        if isinstance(node, (ast.List, ast.Tuple)):
            return all(self.safe_value(e) for e in node.elts)
        if isinstance(node, ast.Name) and not _is_constant_name(node.id):
            values = self.scope.assigned.get(node.id) or [None]
            return all(v is not None and not isinstance(v, Element) and self.safe_iterable(v) for v in values)
        return self.constant_of_code(node)

    def constant_of_code(self, node: ast.AST) -> bool:
        """`METRICS[key].name`, `lab.EXPECTED_TEXT[...]`, `sweep.READING`: rooted in an UPPER_CASE constant."""
        while isinstance(node, (ast.Attribute, ast.Subscript)):
            if isinstance(node, ast.Attribute) and _is_constant_name(node.attr):
                return True
            node = node.value
        if not isinstance(node, ast.Name):
            return False
        if _is_constant_name(node.id):
            return True
        values = self.scope.assigned.get(node.id)  # `m = METRICS[key]`, then `m.name`
        return bool(values) and all(v is not None and not isinstance(v, Element) and self.constant_of_code(v) for v in values)

    def safe_name(self, name: str) -> bool:
        values = self.scope.assigned.get(name)
        if not values or name in self.seen:
            return _is_constant_name(name)
        self.seen.add(name)
        try:
            return all(self.safe_value(v) for v in values)
        finally:
            self.seen.discard(name)

    def safe_text(self, node: ast.AST) -> bool:
        """A whole text argument: built text is checked; a plain variable only where this function builds it."""
        if isinstance(node, ast.Name):
            built = [v for v in self.scope.assigned.get(node.id, []) if isinstance(v, (ast.JoinedStr, ast.BinOp, ast.Call, Element))]
            return all(self.safe_value(v) for v in built if not isinstance(v, ast.Call) or _joins_or_formats(v) or _escaping_call(v))
        if isinstance(node, (ast.JoinedStr, ast.BinOp, ast.IfExp)) or _joins_or_formats(node):
            return self.safe_value(node)
        if isinstance(node, (ast.List, ast.Tuple)):
            return all(self.safe_text(e) for e in node.elts)
        return True


def _joins_or_formats(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("join", "format")


def _text_arguments(call: ast.Call) -> list[ast.AST]:
    out = []
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    if isinstance(func, ast.Attribute) and name in TEXT_CALLS and call.args:
        out.append(call.args[0])
    out += [k.value for k in call.keywords if k.arg in TEXT_KEYWORDS and (k.arg == "help" or name in TEXT_CALLS)]
    out += [k.value for k in call.keywords if k.arg == "text" and name == "progress"]  # a progress bar's text is markdown too
    return out


def unescaped_text(source: str, filename: str = "<source>") -> list[str]:
    """`file:line: call` for every text call whose text may hold an unescaped dynamic value."""
    tree = ast.parse(source, filename)
    scopes: dict[ast.AST, Scope] = {}
    parents: dict[ast.AST, ast.AST] = {}
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            parents[child] = node
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        owner: ast.AST = node
        while owner in parents and not isinstance(owner, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            owner = parents[owner]
        scope = scopes.setdefault(owner, Scope.of(owner))
        checker = Checker(scope)
        for argument in _text_arguments(node):
            if not checker.safe_text(argument):
                found.append(f"{filename}:{node.lineno}: {ast.unparse(node)[:160]}")
                break
    return found


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(REPO)))
def test_dynamic_text_reaches_the_page_escaped(path: Path):
    found = unescaped_text(path.read_text(encoding="utf-8"), str(path.relative_to(REPO)))
    assert not found, "dynamic text into markdown without ui.feedback.md:\n" + "\n".join(found)


UNSAFE = [
    'st.subheader(f"{pair.bias_type} pair")',
    'st.caption(f"`{settings.model}`" + (f" · revision `{settings.revision}`" if settings.revision else ""))',
    'sb.markdown("Model: " + name)',
    'col.caption(", ".join(names))',
    'st.info("Labels: {}".format(s.group_a_label))',
    'st.warning(f"{value!r}: {n:d}")',
    'st.button(f"Use {model.label}", help=f"{name}")',
    'def f(label):\n    title = f"{label} #{n:d}"\n    st.subheader(title)',
    'def f(x):\n    st.metric(f"More associated with {x}", "1")',
    'def f(x):\n    st.expander(f"{x.label}: d = {x.d:.3f}")',
    'for note in result.notes:\n    st.caption(f"Note: {note}")',
    'bar.progress(0.5, text=f"{label}: starting…")',
    "for warning in report.warnings():\n    st.warning(warning)",
    'lines = [f"{source.caveat}", f"{name}"]\nst.warning("  \\n".join(lines))',
    'lines = ["Note"]\nlines.append(f"{name}")\nst.warning("  \\n".join(lines))',
]
SAFE = [
    'st.subheader(f"{md(pair.bias_type)} pair")',
    'st.caption(f"{ui.feedback.code(settings.model)} · revision {ui.feedback.md(settings.revision)}")',
    'st.caption(f"{len(rows):,} of {total:,} pairs · {share:.1f}% · seed {seed:d}")',
    'st.markdown(f"**{METRICS[key].name}** prefers the **{VERDICTS[v]}** sentence")',
    "st.caption(lab.SCENARIOS[k].description)",
    'st.info(", ".join(METRICS[m].name for m in metrics))',
    'def f(exc):\n    message, hint = explain(exc)\n    st.info(message + (f"\\n\\n{hint}" if hint else ""))',
    "def f(text):\n    st.caption(text)",
    "st.markdown(ABOUT.format(layers=DEFAULTS.num_layers, pairs=len(pairs)))",
    'st.warning(f"Sanity check failed: {explain(exc)[0]}")',
    'm = METRICS[key]\nnotes = [f"Ideal: {m.ideal:g}. {m.direction}", m.note]\nst.caption("  \\n".join(n for n in notes if n))',
]


@pytest.mark.parametrize("source", UNSAFE)
def test_the_check_refuses_dynamic_text(source):
    assert unescaped_text(source), source


@pytest.mark.parametrize("source", SAFE)
def test_the_check_accepts_escaped_numbers_and_constants(source):
    assert not unescaped_text(source), source


# ---------------------------------------------------------------------------------------
# What `md` writes: every automatic link GitHub-flavoured markdown knows stays text (issue 36, item 1)
# ---------------------------------------------------------------------------------------

#: Text that GitHub-flavoured markdown (Streamlit's remark-gfm) turns into a link by itself: extended autolinks (www., http://,
#: https://, any case, with trailing punctuation, inside emphasis or parentheses), e-mail addresses bare and with mailto: or
#: xmpp:, and CommonMark's angle autolinks of any scheme.
AUTOLINK_FORMS = [
    "www.evil.example/login",
    "WWW.Evil.Example",
    "www.evil.example.",
    "www.evil.example/a_(b)?c=d&e=f!",
    "(www.evil.example/login)",
    "*www.evil.example*",
    "_www.evil.example_",
    "~www.evil.example~",
    "a.www.evil.example",
    "http://evil.example/login",
    "https://evil.example/a?b=c#d",
    "HTTPS://EVIL.EXAMPLE",
    "'http://evil.example/x'!?",
    "see:http://evil.example",
    "x@evil.example",
    "first.last+tag@sub.evil.example",
    "(x@evil.example).",
    "mailto:x@evil.example",
    "MAILTO:x@evil.example",
    "xmpp:x@evil.example/resource",
    "<http://evil.example/login>",
    "<https://evil.example>",
    "<ftp://evil.example/file>",
    "<mailto:x@evil.example>",
    "<xmpp:x@evil.example>",
    "<irc://evil.example/channel>",
    "<x@evil.example>",
]
#: Addresses GitHub-flavoured markdown leaves as text (no extended autolink for ftp://, for instance): `md` must keep them text too.
TEXT_FORMS = ["ftp://evil.example/file", "evil.example/login", "irc://evil.example"]


@pytest.mark.parametrize("form", AUTOLINK_FORMS)
def test_the_check_sees_every_automatic_link(form):
    from tests.support.app import live_markup

    assert live_markup([form]) == [form]  # (so the next test can fail)


#: The app's own markdown around an escaped value, and the text it shows.
TEMPLATES = {
    "alone": ("{}", "{}"),
    "sentence": ("Model folder {} does not exist.", "Model folder {} does not exist."),
    "bold": ("**{}**", "{}"),
    "heading": ("### {} pair", "{} pair"),
}


@pytest.mark.parametrize("form", AUTOLINK_FORMS + TEXT_FORMS)
@pytest.mark.parametrize("template", list(TEMPLATES))
def test_md_keeps_every_automatic_link_as_text(form, template):
    import html

    from markdown_it import MarkdownIt

    from tests.support.app import live_markup
    from ui.text import md

    markup, shown = TEMPLATES[template]
    escaped = markup.format(md(form))
    assert live_markup([escaped]) == [], escaped
    rendered = html.unescape(re.sub(r"<[^>]+>", "", MarkdownIt("commonmark").render(escaped))).replace("\u200b", "").strip()
    assert rendered == shown.format(form)  # shown as itself
