"""Which tokens of a sentence pair are modified (M) and which are shared (U).

`difflib.SequenceMatcher` over the two token-id lists (as strings), the stereotypical
sentence first, exactly as the reference code does. Positions inside `equal` opcodes
are unmodified and aligned one-to-one; every other position is modified. Special tokens
are in neither set.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

import numpy as np

from biaslens.engine.models import Encoding


@dataclass(frozen=True)
class Alignment:
    """Token positions of a pair (a = stereotypical, b = anti-stereotypical sentence)."""

    modified_a: tuple[int, ...]
    modified_b: tuple[int, ...]
    unmodified_a: tuple[int, ...]  # unmodified_a[k] is aligned with unmodified_b[k]
    unmodified_b: tuple[int, ...]
    opcodes: tuple[tuple[str, int, int, int, int], ...]

    def modified(self, side: str) -> tuple[int, ...]:
        return self.modified_a if side == "a" else self.modified_b

    def unmodified(self, side: str) -> tuple[int, ...]:
        return self.unmodified_a if side == "a" else self.unmodified_b


def align_ids(
    ids_a: tuple[int, ...] | list[int],
    ids_b: tuple[int, ...] | list[int],
    special_a: tuple[bool, ...] | list[bool] | None = None,
    special_b: tuple[bool, ...] | list[bool] | None = None,
) -> Alignment:
    """Align two token-id sequences; special positions are left out of M and U."""
    special_a = special_a if special_a is not None else [False] * len(ids_a)
    special_b = special_b if special_b is not None else [False] * len(ids_b)
    matcher = difflib.SequenceMatcher(None, [str(i) for i in ids_a], [str(i) for i in ids_b])
    opcodes = tuple(matcher.get_opcodes())
    mod_a: list[int] = []
    mod_b: list[int] = []
    same_a: list[int] = []
    same_b: list[int] = []
    for tag, i1, i2, j1, j2 in opcodes:
        if tag == "equal":
            for i, j in zip(range(i1, i2), range(j1, j2)):
                if not (special_a[i] or special_b[j]):
                    same_a.append(i)
                    same_b.append(j)
        else:
            mod_a += [i for i in range(i1, i2) if not special_a[i]]
            mod_b += [j for j in range(j1, j2) if not special_b[j]]
    return Alignment(tuple(mod_a), tuple(mod_b), tuple(same_a), tuple(same_b), opcodes)


def align_pair(stereo: Encoding, anti: Encoding) -> Alignment:
    """Modified and unmodified token positions of an encoded sentence pair."""
    return align_ids(stereo.ids, anti.ids, stereo.special, anti.special)


def modified_mask(encoding: Encoding, alignment: Alignment, side: str) -> np.ndarray:
    """Boolean array over the sentence's positions: True where the token is modified."""
    out = np.zeros(len(encoding), dtype=bool)
    out[list(alignment.modified(side))] = True
    return out


__all__ = ["Alignment", "align_ids", "align_pair", "modified_mask"]
