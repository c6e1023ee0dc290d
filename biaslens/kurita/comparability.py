"""When a result may be set beside Kurita et al.'s published numbers (Tables 3 and 5), and why not otherwise.

A published number fills a column only when the list, its size, the template(s), the
targets and the model are the paper's (`weat_comparability`, `share_comparability`);
otherwise the column says "not comparable: <reason>" (`not_comparable`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from biaslens.kurita.inputs import KURITA_CATEGORIES, Permute, WeatSpec, parse_target_pairs, parse_templates

if TYPE_CHECKING:
    from biaslens.kurita.scores import TemplateScores

CITATION = (
    "Keita Kurita, Nidhi Vyas, Ayush Pareek, Alan W Black, Yulia Tsvetkov (2019). Measuring Bias in Contextualized Word Representations. GeBNLP 2019."
)

#: Kurita et al.'s model (Tables 3 and 5): published numbers are compared with this model only.
PAPER_MODEL = "bert-base-uncased"


def paper_model_reason(model: str, model_type: str | None = None) -> str | None:
    """None when `model` is Kurita et al.'s bert-base-uncased, else why it is not comparable.

    Told by the model id: a hub id (``bert-base-uncased``, ``google-bert/bert-base-uncased``)
    or a folder named so, whose ``model_type`` (when known) is ``bert``.
    """
    tail = model.rstrip("/\\").replace("\\", "/").rsplit("/", 1)[-1]
    if tail != PAPER_MODEL:
        return f"model {tail or 'unknown'} is not the paper's {PAPER_MODEL}"
    if model_type not in (None, "", "bert"):
        return f"model type {model_type} is not BERT"
    return None


def _manifest_reason(manifest: Mapping[str, Any]) -> str | None:
    return paper_model_reason(str(manifest.get("model") or ""), manifest.get("model_type"))


def weat_comparability(spec: WeatSpec, model: str, permute: Permute = "attributes", model_type: str | None = None) -> str | None:
    """None when a WEAT-style result can be set beside Kurita et al.'s Table 3, else the reason it cannot.

    Comparable: one of the paper's five tests with the paper's templates and target pairs
    (`KURITA_CATEGORIES`), the word sets of its WEAT file, attributes permuted (the paper's
    test) and the paper's model.
    """
    from biaslens.data.published import KURITA_WEAT

    if spec.key not in KURITA_CATEGORIES or spec.key not in KURITA_WEAT:
        return "not one of the paper's five tests"
    cat = KURITA_CATEGORIES[spec.key]
    if spec.templates != parse_templates(cat.templates) or spec.pairs != parse_target_pairs(cat.pairs):
        return "templates or targets differ from the paper's"
    if spec.source and spec.source != f"{cat.weat}.jsonl":
        return f"word sets from {spec.source}, not {cat.weat}.jsonl"
    if permute != "attributes":
        return "targets permuted; the paper permutes the attributes"
    return paper_model_reason(model, model_type)


def not_comparable(reason: str) -> str:
    """The text a published-number column shows when the comparison does not hold."""
    return f"not comparable: {reason}"


# ---------------------------------------------------------------------------------------
# Attribute lists (Table 5)
# ---------------------------------------------------------------------------------------

#: Kurita et al.'s Table 5 lists and templates (key of published.KURITA_ATTRIBUTE_SHARES -> template).
TABLE5_TEMPLATES = {
    "salary job titles": "[T] is [A]",
    "positive traits": "[T] is [A]",
    "negative traits": "[T] is [A]",
    "skills": "[T] can do [A]",
}


def _template_form(text: str) -> str:
    return " ".join(text.lower().rstrip(" .").split())


def share_comparability(key: str | None, scores: TemplateScores) -> str | None:
    """None when a list's share can be set beside Kurita et al.'s Table 5 entry `key`, else the reason it cannot.

    Comparable: the list is one of the paper's (by its name), of the paper's size (where the
    paper states it), scored with the paper's one template for it (case and a final full
    stop aside) and the single pair he/she, by the paper's model (bert-base-uncased).
    """
    from biaslens.data.published import KURITA_LIST_SIZES

    if key is None:
        return "not one of the paper's lists"
    size = KURITA_LIST_SIZES.get(key)
    if size is not None and len(scores.attributes) != size:
        return f"{len(scores.attributes):,} items; the paper's {key} list has {size:,}"
    want = TABLE5_TEMPLATES[key]
    if [_template_form(t.text) for t in scores.templates] != [_template_form(want)]:
        return f"template {' ; '.join(t.line for t in scores.templates)!r}; the paper's is {want!r}"
    if [p.label for p in scores.pairs] != ["he/she"]:
        return f"targets {', '.join(p.label for p in scores.pairs)}; the paper's are he/she"
    return _manifest_reason(scores.manifest)


# ---------------------------------------------------------------------------------------
# Published lists (the command line is `biaslens.cli.kurita`)
# ---------------------------------------------------------------------------------------


def published_list_key(name: str) -> str | None:
    """The Table 5 list a file name stands for ("positive_traits" -> "positive traits"), if any."""
    from biaslens.data.published import KURITA_ATTRIBUTE_SHARES

    normal = " ".join(name.lower().replace("_", " ").replace("-", " ").split())
    return next((key for key in KURITA_ATTRIBUTE_SHARES if normal.endswith(key)), None)
