"""What biaslens accepts as a sentence, checked before any model is loaded.

A sentence is text that is not blank and holds no control character: NUL and the other C0
and C1 controls (tab, line feed and carriage return excepted) are invisible, tokenizers drop
them silently (the sentence would be scored as if they were absent), and they would be
written raw into `pairs.csv`. The two sentences of a pair must also differ.

`LanguageModel.encode`, `inspect_pair`, the CLI (before it loads a model) and so the app's typed
sentences go through `check_sentence` / `check_pair`; data files are refused when read if
they hold a control character (`datafiles.read_text`, with its line).
"""

from __future__ import annotations

import re

from biaslens.errors import InputError

#: C0 controls other than tab, line feed and carriage return; DEL; C1 controls.
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


def control_character(text: str) -> int | None:
    """The offset of the first control character in `text`, or None."""
    found = _CONTROL.search(text)
    return None if found is None else found.start()


def describe_control(character: str) -> str:
    """A control character for messages: 'U+0000 (NUL)', 'U+001B'."""
    return f"U+{ord(character):04X}" + (" (NUL)" if character == "\x00" else "")


def check_sentence(text: object, label: str = "The sentence") -> str:
    """`text` if it is a sentence biaslens scores; else an `InputError` naming `label` and what is wrong."""
    if not isinstance(text, str) or not text.strip():
        raise InputError(f"{label} is empty.")
    at = control_character(text)
    if at is not None:
        raise InputError(f"{label} contains the control character {describe_control(text[at])} at character {at + 1}: remove it.")
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


__all__ = ["check_pair", "check_sentence", "control_character", "describe_control"]
