"""The synthetic corpus and the held-out pairs, labelled with the planted truth."""

from __future__ import annotations

import random
from dataclasses import dataclass

import pandas as pd

from biaslens.data.datasets import Pair
from biaslens.lab.settings import HELDOUT_PER_WORD, LabSettings, _template_parts


@dataclass(frozen=True)
class LabSentence:
    """One generated sentence and the character spans of its group word and its attribute."""

    text: str
    name_span: tuple[int, int]
    attribute_span: tuple[int, int]


def fill_template(template: str, name: str, attribute: str) -> LabSentence:
    pieces: list[str] = []
    spans: dict[str, tuple[int, int]] = {}
    length = 0
    for literal, slot in _template_parts(template):
        pieces.append(literal)
        length += len(literal)
        if slot is not None:
            word = name if slot == "name" else attribute
            spans[slot] = (length, length + len(word))
            pieces.append(word)
            length += len(word)
    return LabSentence("".join(pieces), spans["name"], spans["attribute"])


def heldout_attributes(word_index: int, n_attributes: int) -> tuple[int, ...]:
    """Indices of the attributes (of either set) that word `word_index` of either group never meets."""
    return tuple((word_index + k) % n_attributes for k in range(HELDOUT_PER_WORD))


def _even_split(total: int, parts: int, rng: random.Random) -> list[int]:
    """`total` split into `parts` counts that differ by at most one, the larger ones at random."""
    counts = [total // parts] * parts
    for i in rng.sample(range(parts), total % parts):
        counts[i] += 1
    return counts


def generate_corpus(settings: LabSettings) -> list[LabSentence]:
    """`corpus_size` training sentences with exactly the planted association and frequency ratio.

    The corpus is stratified, not sampled, so the planted statistics hold exactly rather
    than up to sampling noise: group A gets k / (k + 1) of the sentences, spread evenly
    over its words; each word goes with its group's own attribute set in a fraction
    `association` of its sentences (rounded) and with the other set otherwise; within a
    set, the word cycles through the attributes it may meet (all but its held-out ones)
    in a shuffled order. Templates are drawn at random and the corpus is shuffled.
    """
    rng = random.Random(f"lab-corpus-{settings.seed}")
    k = settings.frequency_ratio
    n_a = round(settings.corpus_size * k / (k + 1.0))
    sentences = []
    for names, own, other, total in (
        (settings.group_a, settings.attributes_x, settings.attributes_y, n_a),
        (settings.group_b, settings.attributes_y, settings.attributes_x, settings.corpus_size - n_a),
    ):
        for i, count in enumerate(_even_split(total, len(names), rng)):
            n_own = round(count * settings.association)
            for attributes, n in ((own, n_own), (other, count - n_own)):
                held = heldout_attributes(i, len(attributes))
                allowed = [a for j, a in enumerate(attributes) if j not in held]
                rng.shuffle(allowed)
                for t in range(n):
                    sentences.append(fill_template(rng.choice(settings.templates), names[i], allowed[t % len(allowed)]))
    rng.shuffle(sentences)
    return sentences


@dataclass(frozen=True)
class LabPair:
    """A held-out pair with its planted truth."""

    pair: Pair
    group_a_side: str  # "stereo" or "anti": which sentence names the group-A word
    expected: str  # LabSettings.expected


def heldout_pairs(settings: LabSettings) -> list[LabPair]:
    """The held-out combinations as CrowS-Pairs-style pairs, labelled with the planted truth.

    For every word index i and every attribute h that words A_i and B_i never meet:
    (A_i with X_h) vs (B_i with X_h), bias type X, and (B_i with Y_h) vs (A_i with Y_h),
    bias type Y. The stereotypical sentence follows the planted direction A-X / B-Y, and
    as many stereotypical sentences name group A as name group B. Each pair uses the
    next template in turn, so no two pairs share a word pair, an attribute and a
    template: pairs are as independent as the design allows, which the 95% interval of
    the bias score assumes.
    """
    out: list[LabPair] = []
    for i, (a, b) in enumerate(zip(settings.group_a, settings.group_b)):
        for attributes, label, stereo, anti, a_side in (
            (settings.attributes_x, settings.attributes_x_label, a, b, "stereo"),
            (settings.attributes_y, settings.attributes_y_label, b, a, "anti"),
        ):
            for h in heldout_attributes(i, len(attributes)):
                template = settings.templates[len(out) % len(settings.templates)]
                pair = Pair(
                    pair_id=len(out),
                    dataset="lab",
                    bias_type=label,
                    direction="stereo",
                    sent_stereo=fill_template(template, stereo, attributes[h]).text,
                    sent_anti=fill_template(template, anti, attributes[h]).text,
                )
                out.append(LabPair(pair, a_side, settings.expected))
    return out


def heldout_frame(settings: LabSettings) -> pd.DataFrame:
    """The held-out pairs in the CrowS-Pairs CSV format, plus the planted truth columns."""
    return pd.DataFrame(
        [
            {
                "sent_more": p.pair.sent_stereo,
                "sent_less": p.pair.sent_anti,
                "stereo_antistereo": p.pair.direction,
                "bias_type": p.pair.bias_type,
                "planted_truth": p.expected,
                "group_a_side": p.group_a_side,
            }
            for p in heldout_pairs(settings)
        ]
    )
