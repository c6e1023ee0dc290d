"""Does a loaded model look trained? A quick check on a few plain sentences.

Bias scores of an untrained (randomly initialised) model are meaningless, yet they look
like ordinary numbers: one popular package silently scores random weights when a
checkpoint lacks its masked-LM head. `check_model` runs the unmasked pass on a few plain
English sentences and reports the token prediction accuracy (the share of tokens whose
gold token is the model's arg-max) and the mean token log-probability. A trained masked
LM predicts nearly every visible token of such sentences; a random one is close to the
uniform distribution over its vocabulary (log-probability about -log V, accuracy about 0).
`model_verdict` is the one verdict per model that every caller shows (the app's sidebar and banners,
Paper analyses, reports, the CLI, the zoo's cells and so the leaderboard): it checks a model folder
that carries its training corpus (a bias-lab model) on that corpus (`check_model` with other
`sentences`) and any other model on the plain ones. `vocabulary_report` tells whether a text is
mostly out of a model's vocabulary (a lab model reading CrowS-Pairs spells most words letter by letter).

The module imports no torch until a model is checked: the zoo's readers (status, merge, the leaderboard) use its
labels (`VERDICT_LABELS`, `worst_verdict`) without it.
"""

from __future__ import annotations

import math
import threading
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Sequence

import numpy as np

from biaslens.errors import ModelLoadError

if TYPE_CHECKING:
    from biaslens.engine.lm import LanguageModel

#: Plain sentences any trained English language model finds easy (nothing masked; a causal model reads them left to right).
SANITY_SENTENCES: tuple[str, ...] = (
    "The capital of France is Paris.",
    "She opened the door and walked into the room.",
    "Water boils at one hundred degrees.",
    "He drank a cup of coffee before going to work.",
    "The children played in the park after school.",
    "Thank you very much for your help.",
    "The sun rises in the east and sets in the west.",
    "There are seven days in a week.",
)

#: Below this accuracy (%) a model "looks untrained" if its log-probabilities are also near uniform.
UNTRAINED_ACCURACY = 20.0
#: A mean log-probability below this fraction of the uniform one (-log V) counts as near uniform.
NEAR_UNIFORM_FRACTION = 0.5
#: Below this accuracy (%) or mean log-probability a model is flagged as weak.
WEAK_ACCURACY = 50.0
WEAK_LOGPROB = -4.0
#: The same for a causal model, which predicts each token from the ones before it only: a trained GPT-2 gets about a
#: third of plain English's next tokens right at about -3.5 nats a token (an unmasked masked LM sees the token itself).
CAUSAL_THRESHOLDS = {"untrained_accuracy": 5.0, "weak_accuracy": 15.0, "weak_logprob": -6.0}
#: (untrained accuracy, weak accuracy, weak mean log p) by kind of model.
THRESHOLDS = {
    "masked": (UNTRAINED_ACCURACY, WEAK_ACCURACY, WEAK_LOGPROB),
    "causal": (CAUSAL_THRESHOLDS["untrained_accuracy"], CAUSAL_THRESHOLDS["weak_accuracy"], CAUSAL_THRESHOLDS["weak_logprob"]),
}


@dataclass(frozen=True)
class SanityReport:
    """Token prediction on the sanity sentences and what it suggests."""

    accuracy: float  # % of non-special tokens whose gold token is the arg-max
    mean_logprob: float  # mean log p of the non-special tokens (natural log)
    uniform_logprob: float  # -log V: what a model with no preference would give
    n_tokens: int
    n_sentences: int
    status: str  # "ok", "weak" or "untrained"
    message: str  # one line for people
    subject: str = "plain English"  # what the sentences were: "plain English" or "its training corpus"

    @property
    def trustworthy(self) -> bool:
        """True when the model predicts its check sentences well ("ok")."""
        return self.status == "ok"


def classify(accuracy: float, mean_logprob: float, uniform_logprob: float, subject: str = "plain English", kind: str = "masked") -> tuple[str, str]:
    """(status, message) for the numbers of a sanity run on sentences of `subject` by a model of `kind`."""
    numbers = f"token accuracy {accuracy:.0f}%, mean log p {mean_logprob:.2f} (uniform: {uniform_logprob:.2f})"
    untrained, weak_accuracy, weak_logprob = THRESHOLDS[kind]
    if accuracy < untrained and mean_logprob < NEAR_UNIFORM_FRACTION * uniform_logprob:
        return "untrained", (
            f"Looks untrained: {numbers}. Its predictions are close to random, so its bias scores mean nothing; "
            f"check that the checkpoint is a trained {kind} language model."
        )
    if accuracy < weak_accuracy or mean_logprob < weak_logprob:
        return "weak", (f"Predicts {subject} poorly: {numbers}. It may be undertrained or trained on other text; read its bias scores with care.")
    return "ok", f"Predicts {subject} well: {numbers}."


def check_model(lm: LanguageModel, sentences: Sequence[str] = SANITY_SENTENCES, subject: str = "plain English") -> SanityReport:
    """Token prediction accuracy and mean log-probability of `lm` on plain sentences (or other `sentences` of `subject`)."""
    from biaslens.engine.scoring import unmasked_pass

    results = unmasked_pass(lm, [lm.encode(s) for s in sentences], attention=False)
    logprob = np.concatenate([r.logprob[r.encoding.scored_positions] for r in results])
    rank = np.concatenate([r.rank[r.encoding.scored_positions] for r in results])
    accuracy = 100.0 * float(np.mean(rank == 1))
    mean_logprob = float(np.mean(logprob))
    uniform = -math.log(len(lm.tokenizer))
    status, message = classify(accuracy, mean_logprob, uniform, subject, lm.kind)
    return SanityReport(accuracy, mean_logprob, uniform, int(logprob.size), len(sentences), status, message, subject)


#: A bias-lab model's folder holds these beside the model's files (`biaslens.lab.store`): its settings, and the corpus it
#: was trained on, which its sanity check reads.
LAB_FILE = "lab.json"
CORPUS_FILE = "corpus.txt"


def training_sentences(folder: str | Path, n: int = 8) -> tuple[str, ...] | None:
    """`n` distinct sentences of the corpus a model folder says it was trained on (a bias-lab model's `corpus.txt`), or
    None when the folder carries none (any other model). An unreadable corpus is a `ModelLoadError`."""
    folder = Path(str(folder).strip()).expanduser()
    try:
        if not str(folder) or not (folder / LAB_FILE).is_file():
            return None
    except OSError:
        return None
    sentences: list[str] = []
    try:
        with (folder / CORPUS_FILE).open(encoding="utf-8") as f:
            for line in f:
                if line.strip() and line.strip() not in sentences:
                    sentences.append(line.strip())
                if len(sentences) >= n:
                    break
    except (OSError, UnicodeDecodeError) as exc:
        raise ModelLoadError(f"{folder / CORPUS_FILE} is unreadable ({exc}); delete the folder and train again.") from exc
    return tuple(sentences)


_VERDICTS: dict[tuple, SanityReport] = {}
_VERDICTS_LOCK = threading.Lock()
#: Verdicts kept (one per model, device and precision); the oldest goes first.
MAX_VERDICTS = 64


def model_verdict(lm: LanguageModel) -> SanityReport:
    """The one sanity verdict of `lm`, computed once per model (fingerprint, device, dtype) and then reused.

    A bias-lab model knows only its synthetic corpus, so it is checked on sentences of that corpus ("its training
    corpus": `training_sentences`); any other model on `SANITY_SENTENCES` ("plain English"). Every place that shows a
    verdict (app, reports, CLI, the zoo's cells) calls this, so they always agree.
    """
    key = (lm.name, lm.fingerprint, str(lm.device), str(lm.dtype))
    with _VERDICTS_LOCK:
        if key in _VERDICTS:
            return _VERDICTS[key]
    own = training_sentences(lm.name) if lm.source == "local" else None
    full = lm.unlimited()  # the check sentences, whatever length limit a server put on the model
    report = check_model(full, own, subject="its training corpus") if own else check_model(full)
    with _VERDICTS_LOCK:
        if len(_VERDICTS) >= MAX_VERDICTS:
            _VERDICTS.pop(next(iter(_VERDICTS)))
        _VERDICTS[key] = report
    return report


#: A verdict in a word or two, for tables: a results store's cells written before verdicts were stored say "not checked".
VERDICT_LABELS = {"ok": "looks trained", "weak": "predicts poorly", "untrained": "looks untrained", "": "not checked"}
#: The verdicts from the most to the least worrying (a model with cells of several verdicts shows the first).
VERDICT_ORDER = ("untrained", "weak", "", "ok")


def worst_verdict(statuses: Iterable[str | None]) -> str:
    """The most worrying of some verdicts' statuses ("untrained" before "weak" before not checked ("") before "ok")."""
    found = {s if s in VERDICT_LABELS else "" for s in statuses}
    return next((s for s in VERDICT_ORDER if s in found), "")


def untrained_note(models: Sequence[str], shown: int = 5) -> str | None:
    """One line naming the models (labels) whose verdict is "untrained", for a table of many models' scores (None: none)."""
    if not models:
        return None
    names = ", ".join(" ".join(m.split()) for m in models[:shown]) + (f" and {len(models) - shown:,} more" if len(models) > shown else "")
    one = len(models) == 1
    return (
        f"{len(models):,} {'model looks' if one else 'models look'} untrained ({names}): {'its' if one else 'their'} predictions are "
        f"close to random, so {'its' if one else 'their'} bias scores mean nothing, whatever {'its' if one else 'their'} rank."
    )


#: A text counts as "mostly out of vocabulary" for a model when at least this share of its words is unknown.
MOSTLY_UNKNOWN = 0.5


@dataclass(frozen=True)
class VocabularyReport:
    """How many words of some text a model knows: unknown = [UNK], or spelled one character per piece."""

    n_words: int
    unknown: tuple[str, ...]  # the distinct unknown words, in order of appearance

    @property
    def n_unknown(self) -> int:
        return len(self.unknown)

    @property
    def share_unknown(self) -> float:
        return self.n_unknown / self.n_words if self.n_words else 0.0

    @property
    def mostly_unknown(self) -> bool:
        return self.n_words > 0 and self.share_unknown >= MOSTLY_UNKNOWN

    @property
    def message(self) -> str:
        examples = ", ".join(self.unknown[:6]) + (", …" if self.n_unknown > 6 else "")
        return (
            f"{self.n_unknown} of {self.n_words} distinct words are out of this model's vocabulary ({examples}): it reads them "
            "as unknown tokens or letter by letter, so its scores say little about these sentences."
        )


def _word_unknown(word: str, pieces: Sequence[str], unk: str | None) -> bool:
    if unk is not None and unk in pieces:
        return True
    letters = [p.lstrip("#").lstrip("\u0120\u2581") for p in pieces]
    return sum(c.isalpha() for c in word) >= 3 and len(pieces) > 1 and all(len(p) <= 1 for p in letters)


def vocabulary_report(lm: LanguageModel, texts: Iterable[str]) -> VocabularyReport:
    """Which distinct words (letters only, at least 2) of `texts` the model does not know (see `VocabularyReport`)."""
    import re

    tok = lm.tokenizer
    unk = getattr(tok, "unk_token", None)
    seen: dict[str, bool] = {}
    for text in texts:
        for word in re.findall(r"[^\W\d_]{2,}", str(text)):
            if word in seen:
                continue
            pieces = [p for p in tok.tokenize(" " + word) if p.strip("\u0120\u2581")] or tok.tokenize(word)
            seen[word] = _word_unknown(word, pieces, unk)
    return VocabularyReport(len(seen), tuple(w for w, unknown in seen.items() if unknown))


#: Distinct texts whose vocabulary `caveats` checks at most, the first ones (a dataset's first pairs are enough to tell).
VOCABULARY_TEXTS = 200


def caveats(lm: LanguageModel, texts: Iterable[str] | None = None, *, verdict_warning: bool = True) -> tuple[dict[str, Any], list[str]]:
    """What a manifest records about `lm` and what to warn about, in one place: ({"sanity": its verdict (`model_verdict`)}
    and, given `texts`, {"vocabulary": how much of their first `VOCABULARY_TEXTS` distinct ones it knows
    (`vocabulary_report`)}, the warnings). The warnings: the verdict's message when the model does not look trained
    (unless `verdict_warning` is False: a caller that says it itself), the vocabulary's when the texts are mostly out of it."""
    verdict = model_verdict(lm)
    warnings = [verdict.message] if verdict_warning and verdict.status != "ok" else []
    block: dict[str, Any] = {"sanity": asdict(verdict)}
    distinct: dict[str, None] = {}
    for text in texts if texts is not None else ():
        distinct.setdefault(str(text))
        if len(distinct) >= VOCABULARY_TEXTS:
            break
    if distinct:
        vocabulary = vocabulary_report(lm, distinct)
        block["vocabulary"] = {
            "texts": len(distinct), "words": vocabulary.n_words, "unknown": vocabulary.n_unknown,
            "share_unknown": round(vocabulary.share_unknown, 4), "mostly_unknown": vocabulary.mostly_unknown,
            "examples": list(vocabulary.unknown[:20]),
        }  # fmt: skip
        if vocabulary.mostly_unknown:
            warnings.append(vocabulary.message)
    return block, warnings


__all__ = [
    "CORPUS_FILE",
    "LAB_FILE",
    "MAX_VERDICTS",
    "SANITY_SENTENCES",
    "VERDICT_LABELS",
    "VERDICT_ORDER",
    "VOCABULARY_TEXTS",
    "SanityReport",
    "VocabularyReport",
    "caveats",
    "check_model",
    "classify",
    "model_verdict",
    "training_sentences",
    "untrained_note",
    "vocabulary_report",
    "worst_verdict",
]
