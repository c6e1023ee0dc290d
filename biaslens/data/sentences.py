"""What biaslens accepts as a sentence, checked before any model is loaded.

A sentence is text (a `str`; bytes are not text until decoded) that is not blank and holds no
control character: NUL and the other C0 and C1 controls (tab, line feed and carriage return
excepted) are invisible, tokenizers drop them silently (the sentence would be scored as if they
were absent), and they would be written raw into `pairs.csv`. Nor a lone surrogate (U+D800 to
U+DFFF: half of a character, what bytes decoded with `errors="surrogateescape"` leave), which no
tokenizer takes and no UTF-8 file can hold. The two sentences of a pair must also differ.

`LanguageModel.encode`, `inspect_pair`, the CLI (before it loads a model) and so the app's typed
sentences go through `check_sentence` / `check_pair`; data files are refused when read if
they hold a control character (`datafiles.read_text`, with its line).
"""

from __future__ import annotations

import re

from biaslens.errors import InputError

#: C0 controls other than tab, line feed and carriage return; DEL; C1 controls.
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
#: Lone surrogates: halves of a character, never text (a str holds them only when something decoded bytes wrongly).
_SURROGATE = re.compile("[\ud800-\udfff]")


def control_character(text: str) -> int | None:
    """The offset of the first control character in `text`, or None."""
    found = _CONTROL.search(text)
    return None if found is None else found.start()


def describe_control(character: str) -> str:
    """A control character for messages: 'U+0000 (NUL)', 'U+001B'."""
    return f"U+{ord(character):04X}" + (" (NUL)" if character == "\x00" else "")


def check_sentence(text: object, label: str = "The sentence") -> str:
    """`text` if it is a sentence biaslens scores; else an `InputError` naming `label` and what is wrong."""
    if isinstance(text, (bytes, bytearray, memoryview)):
        raise InputError(f"{label} is bytes, not text: decode it first (e.g. .decode('utf-8')).")
    if text is not None and not isinstance(text, str):
        raise InputError(f"{label} must be a str, not {type(text).__name__}.")
    if not text or not text.strip():
        raise InputError(f"{label} is empty.")
    return check_characters(text, label)


def check_characters(text: str, label: str) -> str:
    """`text` if it holds no control character and no lone surrogate (blank is fine: a separator); else an `InputError`."""
    at = control_character(text)
    if at is not None:
        raise InputError(f"{label} contains the control character {describe_control(text[at])} at character {at + 1}: remove it.")
    half = _SURROGATE.search(text)
    if half is not None:
        raise InputError(
            f"{label} contains a lone surrogate, U+{ord(half.group()):04X} at character {half.start() + 1}: half of a character, not "
            "text (what bytes that are not UTF-8 leave when decoded with errors='surrogateescape'); give UTF-8 text, or remove it."
        )
    return text


def check_pair(sent_stereo: object, sent_anti: object) -> None:
    """Both sentences of a pair are sentences (`check_sentence`) and differ; else an `InputError` in one line."""
    for name, label, value in (("sent_stereo", "stereotypical", sent_stereo), ("sent_anti", "anti-stereotypical", sent_anti)):
        if not isinstance(value, str):
            raise InputError(f"{name} must be a sentence (a str), not {'None' if value is None else 'a ' + type(value).__name__}.")
        check_sentence(value, f"The {label} sentence")
    assert isinstance(sent_stereo, str) and isinstance(sent_anti, str)
    if sent_stereo.strip() == sent_anti.strip():
        raise InputError("The two sentences are identical: change at least one word in one of them.")


__all__ = ["check_characters", "check_pair", "check_sentence", "control_character", "describe_control"]
