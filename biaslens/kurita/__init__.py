"""Kurita et al. (2019): log probability bias scores from templates, WEAT-style tests, attribute lists.

A template such as ``[T] is a [A].`` has a target slot ``[T]`` (e.g. he / she) and an
attribute slot ``[A]`` (e.g. a job). For every template, target T and attribute A
(``shared/spec/metrics.md``, section "Kurita"):

* p_tgt = P([MASK] = T) with T masked and A filled in;
* p_prior = P([MASK] = T) with both T and A masked, read at **T's own mask** (the
  released code reads the wrong mask position; biaslens does not);
* increased log probability = log p_tgt − log p_prior;
* bias score of a target pair (e.g. he/she) = the difference of the two targets'
  increased log probabilities (positive: the attribute raises the first target more).

Tokens are located by character offsets in the filled sentence, so RoBERTa's
leading-space pieces ("Ġhe" vs "he") and ALBERT's "▁" come out right. A target is always
one mask; a target of several word pieces is scored by its first piece (as the paper
does) and flagged. An attribute of several pieces is masked piece by piece for p_prior
(the sentence keeps its length) and flagged. Every template × attribute × target query
goes through one batched `masked_pass`; the targets of a template and attribute share
one query (their log probabilities are candidates read at the same mask).

On top of the scores:

* `score_templates` → `TemplateScores`: the long table, the per-attribute table
  (increased log probability per target, bias score per pair) and the share of
  attributes more associated with the first target (Kurita's Table 5); `leaning` picks the
  attributes that lean most toward each side, by the signed bias score.
* `weat_test` with `kurita_weat_spec`: the paper's five WEAT-style tests (Table 3) with
  effect size d and a seeded permutation test (exact when small): ``p_value`` is the
  paper's one-sided p = Pr[S_i > S], ``p_two_sided`` = Pr[|S_i| >= |S|] beside it.
* Published numbers (Tables 3 and 5) are set beside a result only when the list, its size,
  the template(s), the targets and the model are the paper's (`weat_comparability`,
  `share_comparability`); otherwise the column says "not comparable: <reason>".

How biaslens reads the paper's WEAT-style test (documented in docs/kurita.md): the
template targets (flowers/insects, white/black, he/she/boys/girls/men/women) play
WEAT's attribute role A/B, and the WEAT word sets fill the template's attribute slot and
play WEAT's target role X/Y. Per word w, s(w) = mean over templates × first targets of
the increased log probability − the same over the second targets, i.e. w's mean bias
score; d = (mean_X s − mean_Y s) / std_{X∪Y} s (ddof=1) and the permutation test
re-partitions the words ("we compute the mean log probability bias score of each
attribute, and permute the attributes", Kurita et al. 2019, Sec. 5). With
``permute="targets"`` the roles are swapped (s per template target, re-partitions of
the targets), as in the authors' second notebook; with one or two targets per side that
test cannot reach significance.

The package, by concern: `inputs` (templates, target pairs, word lists, the paper's five
tests), `scores` (masked queries, `score_templates`, `TemplateScores`), `weat` (unit
scores, effect size, permutation p-values, Table 3), `shares` (Table 5), `comparability`
(when the published numbers apply). Its charts are in `biaslens.figures.charts` (`bias_chart`,
`effect_size_chart`, `shares_chart`): this package never imports figures.
"""

from __future__ import annotations


from biaslens.kurita.comparability import (
    CITATION,
    PAPER_MODEL,
    TABLE5_TEMPLATES,
    not_comparable,
    paper_model_reason,
    published_list_key,
    share_comparability,
    weat_comparability,
)
from biaslens.kurita.inputs import (
    A_SLOT,
    KURITA_CATEGORIES,
    T_SLOT,
    Permute,
    TargetPair,
    Template,
    WeatSpec,
    WordList,
    decode_word_list,
    kurita_weat_spec,
    parse_target_pairs,
    parse_template,
    parse_templates,
    parse_word_list,
    read_word_list,
)
from biaslens.kurita.scores import NO_CAUSAL_READING, SCORE_COLUMNS, Progress, Share, TemplateScores, leaning, score_templates
from biaslens.kurita.shares import shares_table
from biaslens.kurita.weat import ALPHA, WeatResult, save_weat, weat_statistics, weat_table, weat_test, weat_unit_scores

__all__ = [
    "ALPHA",
    "NO_CAUSAL_READING",
    "A_SLOT",
    "CITATION",
    "KURITA_CATEGORIES",
    "PAPER_MODEL",
    "Permute",
    "Progress",
    "SCORE_COLUMNS",
    "TABLE5_TEMPLATES",
    "T_SLOT",
    "Share",
    "TargetPair",
    "Template",
    "TemplateScores",
    "WeatResult",
    "WeatSpec",
    "WordList",
    "decode_word_list",
    "kurita_weat_spec",
    "leaning",
    "not_comparable",
    "paper_model_reason",
    "parse_target_pairs",
    "parse_template",
    "parse_templates",
    "parse_word_list",
    "published_list_key",
    "read_word_list",
    "save_weat",
    "score_templates",
    "share_comparability",
    "shares_table",
    "weat_comparability",
    "weat_statistics",
    "weat_table",
    "weat_test",
    "weat_unit_scores",
]
