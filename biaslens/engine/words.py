"""The words of a text and the word each token belongs to, from the tokenizer's character offsets.

A tokenizer's own idea of a word differs from one tokenizer to the next (BERT splits off
punctuation, sentencepiece splits on spaces only, byte-level BPE glues a word's leading space
to it and may split one character into several byte tokens), so the words of a text are
taken from the text itself: a word is a run of characters without whitespace
(`text_words`). Each token is placed in exactly one of them by where its characters are
(`token_words`), whatever the tokenizer:

* a token's characters are its offsets, trimmed of the whitespace at their edges (GPT-2's
  leading space belongs to no word);
* characters that several tokens claim (the bytes of an emoji; sentencepiece's "▁" given the
  same offsets as the letter after it) are given to one of them (the last of tokens with the
  same offsets, else the first); the others have an empty span there and belong to the same word;
* characters of a word that no token holds (a zero-width character the tokenizer drops) go
  to the token before them in that word (the first token of the word, if they lead it), so
  the tokens of a word hold every character of it once;
* a token of whitespace only (GPT-2's lone "Ġ", a newline) belongs to the word after it
  (before it, at the end of the text);
* a token that spans two words (a tokenizer whose pieces cross spaces) makes them one word.

A word whose every character the tokenizer drops has no token: it is still a word of the text
(`WordSpans.tokens` counts 0 for it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

_WORD = re.compile(r"\S+")


def text_words(text: str) -> list[tuple[int, int]]:
    """(start, end) of each run of non-whitespace characters of `text`, in order."""
    return [m.span() for m in _WORD.finditer(text)]


@dataclass(frozen=True)
class WordSpans:
    """Where the tokens of one text are and which word each belongs to (arrays over the tokens, in order)."""

    #: Each token's characters in the text, [start, end): trimmed, disjoint, in order (empty where a token shares a character).
    start: np.ndarray
    end: np.ndarray
    #: Each token's word (an index into `words`).
    word: np.ndarray
    #: Each word's (start, end) in the text, in order.
    words: tuple[tuple[int, int], ...]

    @property
    def tokens(self) -> np.ndarray:
        """The number of tokens of each word."""
        return np.bincount(self.word, minlength=len(self.words)) if len(self.word) else np.zeros(len(self.words), dtype=np.int64)


def token_words(text: str, offsets: np.ndarray | list[tuple[int, int]]) -> WordSpans:
    """Place each token (its `offsets`: (start, end) in `text`, in token order) in one word of `text` (module docstring)."""
    raw = np.asarray(offsets, dtype=np.int64).reshape(-1, 2)
    n = len(raw)
    limit = len(text)
    starts = np.clip(raw[:, 0], 0, limit)
    ends = np.clip(np.maximum(raw[:, 1], raw[:, 0]), 0, limit)
    # Disjoint and in order: a character already given to an earlier token is not given again.
    start, end = np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64)
    shares = np.zeros(n, dtype=bool)  # all its characters went to earlier tokens: it continues the word before it
    cursor = 0  # characters before it are given
    for k in range(n):
        s, e = int(starts[k]), int(ends[k])
        if e > s and k + 1 < n and (starts[k + 1], ends[k + 1]) == (s, e):  # the next token has the same characters: they are its
            start[k] = end[k] = max(s, cursor)
            continue
        if e > s and e <= cursor:
            shares[k] = True
            start[k] = end[k] = cursor
            continue
        s = max(s, cursor)
        e = max(e, s)
        cursor = max(cursor, e)
        while s < e and text[s].isspace():
            s += 1
        while e > s and text[e - 1].isspace():
            e -= 1
        start[k], end[k] = (s, e) if e > s else (s, s)  # whitespace only, or nothing: empty, where it was
    spans = text_words(text)
    bounds = np.asarray([b for _, b in spans], dtype=np.int64)
    # The word a character is in: the first word whose end is past it (if it starts at or before it).
    first = np.searchsorted(bounds, start, side="right")
    last = np.searchsorted(bounds, np.maximum(end - 1, start), side="right")
    holds = end > start
    # Words a token spans, merged (union-find over word indices).
    parent = list(range(len(spans)))

    def root(w: int) -> int:
        while parent[w] != w:
            parent[w] = parent[parent[w]]
            w = parent[w]
        return w

    for k in np.flatnonzero(holds & (last > first)).tolist():
        for w in range(int(first[k]) + 1, int(last[k]) + 1):
            parent[root(w)] = root(int(first[k]))
    groups: dict[int, int] = {}
    merged: list[list[int]] = []
    for w in range(len(spans)):
        r = root(w)
        if r not in groups:
            groups[r] = len(merged)
            merged.append([spans[w][0], spans[w][1]])
        else:
            merged[groups[r]][1] = spans[w][1]
    group_of = np.asarray([groups[root(w)] for w in range(len(spans))], dtype=np.int64)
    word = np.full(n, -1, dtype=np.int64)
    word[holds] = group_of[first[holds]] if len(spans) else -1
    # Tokens with no character of their own: a shared character continues the token before; whitespace goes to the next word.
    for k in range(n):
        if word[k] < 0 and shares[k] and k > 0 and word[k - 1] >= 0:
            word[k] = word[k - 1]
    following = -1
    for k in range(n - 1, -1, -1):
        if word[k] >= 0:
            following = word[k]
        elif following >= 0:
            word[k] = following
    previous = -1
    for k in range(n):
        if word[k] >= 0:
            previous = word[k]
        else:
            word[k] = max(previous, 0 if merged else -1)
    if not merged:  # a text without a word (never scored: refused as blank) has its tokens in word 0 of nothing
        merged = [[0, limit]]
        word[:] = 0
    _fill_gaps(text, start, end, word, merged)
    return WordSpans(start=start, end=end, word=word, words=tuple((int(a), int(b)) for a, b in merged))


def _fill_gaps(text: str, start: np.ndarray, end: np.ndarray, word: np.ndarray, words: list[list[int]]) -> None:
    """Give each character of a word that none of its tokens holds to the token before it in the word (the first one, if it leads)."""
    for w, (a, b) in enumerate(words):
        members = [k for k in np.flatnonzero(word == w).tolist() if end[k] > start[k]]
        if not members:
            continue
        if start[members[0]] > a:
            start[members[0]] = a
        for k, nxt in zip(members, members[1:]):
            if end[k] < start[nxt]:
                end[k] = start[nxt]
        if end[members[-1]] < b:
            end[members[-1]] = b


#: How a token without a character of its own is drawn: it holds some of the bytes of a character that the token before it
#: is drawn with (a byte-level BPE splits an emoji, "🚗", into three tokens).
BYTE_MARK = "(byte)"
#: Whitespace drawn visibly where a token covers nothing else (GPT-2's lone "Ġ", a newline).
_VISIBLE_SPACE = str.maketrans({" ": "␣", "\n": "⏎", "\t": "⇥", "\r": "␍"})


def display_token(token: str) -> str:
    """A tokenizer's token as people read it when no text is known for it: RoBERTa's Ġ and SentencePiece's ▁ word marks
    dropped (a sentence's own tokens are drawn as the text they cover: `covered_texts`)."""
    shown = token.removeprefix("Ġ").removeprefix("▁")
    return shown if shown else token


def covered_texts(text: str, offsets: np.ndarray | list[tuple[int, int]]) -> list[str]:
    """Each token (its `offsets` in `text`) as the text it covers, for people: "café" for byte-level BPE's "ĠcafÃ©", "🚗"
    for the first of the three tokens of that emoji and `BYTE_MARK` for the two others (`token_words` gives a character to
    one token), "␣" or "⏎" for a token of whitespace only, "" for a token that covers no character (a special token)."""
    raw = np.asarray(offsets, dtype=np.int64).reshape(-1, 2)
    spans = token_words(text, raw)
    out = []
    for (a, b), s, e in zip(raw.tolist(), spans.start.tolist(), spans.end.tolist()):
        covered = text[max(a, 0) : max(b, 0)] if a >= 0 and b > a else ""
        if e > s:
            out.append(text[s:e])
        elif covered.isspace():
            out.append(covered.translate(_VISIBLE_SPACE))
        else:
            out.append(BYTE_MARK if covered else "")
    return out


__all__ = ["BYTE_MARK", "WordSpans", "covered_texts", "display_token", "text_words", "token_words"]
