"""Results in a Jupyter notebook: the HTML that `PairInspection`, `EvaluationResult`, `explore.ModelComparison` and the
tables of `biaslens.score` (`TokenScores`, `WordScores`, `SequenceScores`: the texts aligned in strips, `figures.strips`) show.

Importing this module registers the renderers with `biaslens.engine.display`; the package root does it the first time
a result is shown (`_repr_html_`). The HTML is the app's (`figures.html`: the aligned tokens, the aligned token
chart, its small tables), self-contained (inline CSS, no script, nothing fetched) and escaped: sentences, tokens,
labels and model names are text, never markup.
"""

from __future__ import annotations

import html
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from biaslens.analyses import explore
from biaslens.engine import display
from biaslens.engine.evaluation import EvaluationResult, PairInspection
from biaslens.engine.metrics import METRICS
from biaslens.engine.text_scores import SequenceScores, TextScoring, TokenScores, WordScores
from biaslens.figures.charts import aligned_token_frame
from biaslens.figures.formatting import MARGIN, SCORE_FORMATS, SCORE_KEY, SCORE_LABELS, VERDICTS, column_formats, column_label, margin_formatter
from biaslens.figures.html import CellFormat, aligned_tokens_html, shade_legend_html, table_html, token_bars_html
from biaslens.figures.strips import MAX_STRIPS, strips_html

#: The aligned token chart's measures in a notebook (the inspector's defaults), those the pair has.
MEASURES = ("logprob", "aula_contribution")
#: The summary's columns of a dataset run and of a comparison: the bias score, its interval, N, token accuracy.
SUMMARY_COLUMNS = ("bias_score", "ci_low", "ci_high", "n", "ties", "undecidable", "token_accuracy")
_WRAP = '<div class="bl-notebook" style="max-width:60rem">{}</div>'


def _table(
    frame: pd.DataFrame, columns: Sequence[str], *, key: int = 1, labels: Mapping[str, str] | None = None, formats: Mapping[str, str] | None = None
) -> str:
    """`frame`'s `columns` as the app's small table: headers for people, numbers written as in the app."""
    names = {c: (labels or {}).get(c) or column_label(str(c)) for c in columns}
    fmts = column_formats(frame, columns, formats)
    margin = margin_formatter([v for c, f in fmts.items() if f == MARGIN for v in np.asarray(pd.to_numeric(frame[c], errors="coerce"), dtype=float)])
    cells: dict[str, CellFormat] = {names[c]: (margin if f == MARGIN else f) for c, f in fmts.items()}
    return table_html(frame.loc[:, list(columns)].set_axis([names[c] for c in columns], axis=1), cells, key=key)


def _line(label: str, fields: Mapping[str, Any]) -> str:
    """One line of "key value" fields (missing ones left out), escaped."""
    parts = " · ".join(f"{html.escape(k)} <code>{html.escape(str(v))}</code>" for k, v in fields.items() if v not in (None, ""))
    return f'<div style="font-size:0.85rem;color:#555;margin:0.2rem 0 0.4rem 0">{html.escape(label)}: {parts}</div>'


def manifest_line(manifest: Mapping[str, Any]) -> str:
    """What made a result: model, revision, dtype, device and scoring mode."""
    return _line("Made with", {k: manifest.get(k) for k in ("model", "revision", "dtype", "device", "compat")})


def _notes(notes: Sequence[str], manifest: Mapping[str, Any] | None = None) -> str:
    """The result's notes and warnings, less the sanity verdict's (`caveat_html` shows it above the scores)."""
    message = ((manifest or {}).get("sanity") or {}).get("message")
    shown = [n for n in notes if not (message and n.endswith(message))]
    return "".join(f'<div style="font-size:0.85rem;color:#8a5300">{html.escape(n)}</div>' for n in shown)


def caveat_html(manifest: Mapping[str, Any]) -> str:
    """Above the scores, as the app's banner: a model that looks untrained (its scores are noise) or weak (read them
    with care), from the sanity verdict `biaslens.evaluate` and `biaslens.inspect_pair` record; nothing for a trained one."""
    sanity = manifest.get("sanity") or {}
    status, message = sanity.get("status"), str(sanity.get("message") or "")
    if status not in ("untrained", "weak"):
        return ""
    name = html.escape(str(manifest.get("model") or "This model"))
    head = f"{name} looks untrained: read these results as noise." if status == "untrained" else "Read these results with care."
    return (
        '<div role="alert" style="border-left:4px solid #D55E00;background:#fff4ec;padding:0.4rem 0.7rem;margin:0.3rem 0 0.6rem 0">'
        f"<strong>{head}</strong> {html.escape(message)}</div>"
    )


def pair_inspection_html(inspection: PairInspection) -> str:
    """One pair: its two sentences aligned token by token, the aligned token chart and the sentence scores table."""
    columns = explore.aligned_columns(inspection)
    aligned = aligned_token_frame(columns, explore.token_table(inspection))
    measures = [m for m in MEASURES if m in aligned and bool(aligned[m].notna().any())]
    scores = inspection.summary_frame()
    scores["verdict"] = [VERDICTS[v] for v in scores["verdict"]]
    shown = [*SCORE_KEY, "stereo", "anti", "accuracy_stereo", "accuracy_anti"]
    parts = [
        caveat_html(inspection.manifest),
        aligned_tokens_html(columns),
        _table(scores, shown, key=len(SCORE_KEY), labels=SCORE_LABELS, formats=SCORE_FORMATS),
        *([shade_legend_html(), token_bars_html(aligned, measures, inspection.kind)] if measures else []),
        _notes(inspection.notes, inspection.manifest),
        manifest_line(inspection.manifest),
    ]
    return _WRAP.format("".join(parts))


def evaluation_html(result: EvaluationResult) -> str:
    """A dataset run: each metric's bias score with its 95% interval, N and token accuracy, and what made it."""
    summary = explore.summary_table(result.summary)
    dataset = result.manifest.get("dataset") or {}
    head = _line("Dataset", {"name": dataset.get("name"), "pairs scored": dataset.get("pairs_scored")})
    return _WRAP.format(
        caveat_html(result.manifest)
        + head
        + _table(summary, ["name", *SUMMARY_COLUMNS])
        + _notes(result.warnings, result.manifest)
        + manifest_line(result.manifest)
    )


def comparison_html(comparison: explore.ModelComparison) -> str:
    """Several models on one metric: each one's bias score with its interval, and per bias type."""
    name = METRICS[comparison.metric].name
    parts = [
        f'<div class="bl-ftitle" style="font-weight:600">{html.escape(name)} bias score</div>',
        _table(comparison.scores, ["model", *SUMMARY_COLUMNS]),
    ]
    if not comparison.by_type.empty:
        parts += ['<div style="font-weight:600">Per bias type</div>', _table(comparison.by_type, list(comparison.by_type.columns))]
    parts.append(f"<div>Pairs whose verdict flips between models: {len(comparison.flips):,} of {len(comparison.margins):,}.</div>")
    return _WRAP.format("".join(parts))


#: The columns of a text-scores table's summary (`score_sequences`), and the extra values of a token's tooltip.
SEQUENCE_COLUMNS = ("text_id", "text", "tokens", "scored_tokens", "logprob_sum", "logprob_mean")
TOKEN_TIPS = ("rank", "entropy", "word", "start", "end", "scored")


def _scoring_line(scoring: TextScoring, n: int) -> str:
    fields = {"texts": f"{n:,}", "reading": scoring.reading, "prefix": _first(scoring.prefix), "suffix": _first(scoring.suffix)}
    return _line("Scored", fields)


def _first(values: tuple[str, ...] | None) -> str | None:
    if not values:
        return None
    return values[0] if len(set(values)) == 1 else f"{values[0]} … ({len(values)} different)"


def _complete(frame, columns: Sequence[str]) -> bool:
    return all(c in frame for c in columns)


def token_scores_html(tokens: TokenScores) -> str | None:
    """Each text token by token, aligned in strips shaded by log p, then one line per text (its sum and mean)."""
    if not _complete(tokens, ("text_id", "token", "logprob", "scored", "word")):
        return None
    scoring = tokens.scoring
    parts = [
        _scoring_line(scoring, len(scoring.texts)),
        strips_html(tokens, unit="token", measure="logprob", extra=TOKEN_TIPS),
        _table(tokens.sequences().iloc[:MAX_STRIPS], SEQUENCE_COLUMNS),
        manifest_line(scoring.manifest),
    ]
    return _WRAP.format("".join(parts))


def word_scores_html(words: WordScores) -> str | None:
    """Each text word by word (its tokens' log p added up), aligned in strips."""
    if not _complete(words, ("text_id", "text", "logprob")):
        return None
    scoring = words.scoring
    parts = [
        _scoring_line(scoring, len(scoring.texts)),
        strips_html(words, unit="text", measure="logprob", extra=("tokens", "scored_tokens", "start", "end")),
        manifest_line(scoring.manifest),
    ]
    return _WRAP.format("".join(parts))


def sequence_scores_html(sequences: SequenceScores) -> str | None:
    """One line per text: the reduction's score beside the sum, the mean and the token counts."""
    shown = ("text_id", "text", "tokens", "scored_tokens", "logprob_sum", "logprob_mean", "reduction", "score", "unit")
    if not _complete(sequences, ("text_id", "text", "score")):
        return None
    scoring = sequences.scoring
    table = _table(sequences, [c for c in shown if c in sequences], key=2)
    return _WRAP.format(_scoring_line(scoring, len(sequences)) + table + manifest_line(scoring.manifest))


display.register(PairInspection, pair_inspection_html)
display.register(EvaluationResult, evaluation_html)
display.register(explore.ModelComparison, comparison_html)
display.register(TokenScores, token_scores_html)
display.register(WordScores, word_scores_html)
display.register(SequenceScores, sequence_scores_html)

__all__ = [
    "MEASURES",
    "SEQUENCE_COLUMNS",
    "SUMMARY_COLUMNS",
    "caveat_html",
    "comparison_html",
    "evaluation_html",
    "manifest_line",
    "pair_inspection_html",
    "sequence_scores_html",
    "token_scores_html",
    "word_scores_html",
]
