"""`bf16-rescore` is calibrated, not exact: no doc, docstring, comment or message may promise float32's verdicts for it.

It scores every pair in bfloat16 and re-scores in float32 only the pairs whose margin is within a calibrated estimate
of bfloat16's error (`biaslens.engine.rescore`), so float32's verdict is promised on those pairs only. This test reads
every sentence that names it (or re-scoring, or bfloat16's speed) in the docs, the README and CONTRIBUTING, and in the
docstrings, comments and strings of biaslens, the app and the benchmarks, and fails on one that promises more:
float32's verdicts (or bias scores) not tied to the re-scored pairs, "exact" without "not", or every verdict equal to
float32's ("none should" differ).
"""

from __future__ import annotations

import ast
import io
import re
import tokenize

from tests.support import REPO

#: A sentence about the precision: its name, its old name, re-scoring, or "bfloat16's speed".
MENTION = re.compile(r"bf16-rescore|exact-bf16|\bre-?scor|bfloat16(?:'s)? speed", re.IGNORECASE)
#: What it may say: float32's verdict on the pairs it re-scores (or "on those"), or that it is not exact.
TIED = re.compile(
    r"float32(?:'s)? verdicts? (?:on|for|of) (?:every pair it re-?scores|each pair it re-?scores|the pairs? (?:it )?re-?scor\w*|"
    r"those|the re-?scored|each re-?scored)",
    re.IGNORECASE,
)
NOT_EXACT = re.compile(r"\bnot (?:exact|proven|promised)\b|\bnot a bound\b", re.IGNORECASE)
#: What it may not say.
PROMISES = (
    re.compile(r"float32(?:'s)? (?:verdicts?|bias scores?)", re.IGNORECASE),
    re.compile(r"(?<![`\w])exact(?![-`\w])(?! arithmetic)", re.IGNORECASE),  # not `exact` (a name) nor exact-bf16
    re.compile(r"\bnone should\b|verdicts? = float32|same (?:verdicts?|bias scores?) as float32", re.IGNORECASE),
)


def sentences(text: str) -> list[str]:
    """The sentences of a text: blocks split at blank lines, list items and table cells, then at sentence ends."""
    out = []
    for block in re.split(r"\n\s*\n|\n\s*[-*] |\n\s*\d+\. |\|", text):
        flat = " ".join(block.split())
        out += [s for s in re.split(r"(?<=[.!?])\s+(?=[A-Z*`(\[])", flat) if s]
    return out


def python_texts(source: str) -> list[str]:
    """A module's docstrings, string constants (an f-string's literal parts) and comments: its words, not its code."""
    texts = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            texts.append(node.value)
        elif isinstance(node, ast.JoinedStr):
            texts.append("".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values))
    tokens = tokenize.generate_tokens(io.StringIO(source).readline)
    comments = [t.string.lstrip("#: ") for t in tokens if t.type == tokenize.COMMENT]
    return texts + [" ".join(comments)]


def promises(sentence: str) -> bool:
    """Whether a sentence about bf16-rescore promises more than it gives."""
    if not MENTION.search(sentence) or NOT_EXACT.search(sentence):
        return False
    if PROMISES[2].search(sentence) or PROMISES[1].search(sentence):
        return True
    return bool(PROMISES[0].search(sentence)) and not TIED.search(sentence)


def _documents() -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for path in [REPO / "README.md", REPO / "CONTRIBUTING.md", *sorted((REPO / "docs").rglob("*.md"))]:
        found[str(path.relative_to(REPO))] = [path.read_text(encoding="utf-8")]
    code = [REPO / "app.py", *(p for folder in ("biaslens", "ui", "pages", "benchmarks") for p in sorted((REPO / folder).rglob("*.py")))]
    for path in code:
        found[str(path.relative_to(REPO))] = python_texts(path.read_text(encoding="utf-8"))
    return found


def test_no_doc_docstring_or_benchmark_promises_float32_s_verdicts_for_bf16_rescore():
    found = [f"{name}: {s}" for name, texts in _documents().items() for text in texts for s in sentences(text) if promises(s)]
    assert not found, "bf16-rescore promised as exact:\n" + "\n".join(found)


def test_the_check_tells_a_promise_from_what_bf16_rescore_gives():
    """The wordings that promised it (issue 40) are caught; what it does promise passes."""
    for promise in (
        "in the model's dtype or, with `precision=\"bf16-rescore\"`, with float32's verdicts at bfloat16's speed.",
        "*Exact verdicts at bfloat16 speed*: `--precision bf16-rescore`.",
        '`precision="bf16-rescore"` scores in bfloat16 and re-scores in float32 the pairs bfloat16 cannot settle: float32\'s '
        "verdicts and bias scores.",
        "verdicts against float32, per metric: how many differ in bfloat16 and in bf16-rescore (none should).",
        "Every pair scored with `metrics`, float32's verdict each time: (scored pairs, the metrics re-scored in float32).",
    ):
        assert promises(" ".join(promise.split())), promise
    for fine in (
        "What it promises: float32's verdict on every pair it re-scores, bfloat16's on the rest.",
        "It re-scores in float32 the pairs whose margin is within a calibrated estimate: float32's verdict on those, bfloat16's on the rest.",
        "The exact-bf16 precision was renamed bf16-rescore: it is not exact; use float32 for float32's verdicts.",
        "Use float32 (the default) for float32's verdicts.",  # says nothing of bf16-rescore
    ):
        assert not promises(fine), fine
    assert sentences("One sentence. Two `bf16-rescore` here.\n\n| a | b |") == ["One sentence.", "Two `bf16-rescore` here.", "a", "b"]


def test_every_source_is_read():
    documents = _documents()
    for name in ("README.md", "docs/performance.md", "docs/python.md", "benchmarks/gpu_check.py", "biaslens/engine/evaluation.py", "app.py"):
        assert name in documents and any(documents[name]), name
