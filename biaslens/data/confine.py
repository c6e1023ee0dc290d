"""Where a file opened on a user's behalf may be: the allowed folders of the server settings in effect.

A server (`biaslens.serving.server.ServerSettings.in_effect`) puts its rules in effect around each page run with
`confined`; `datafiles.read_bytes` checks every data file with `confine_data_file` and `load_model` every local model
folder with `confine_model_folder`. With no rules in effect (the CLI, the Python API), any file may be read.
"""

from __future__ import annotations

import contextlib
from contextvars import ContextVar
from pathlib import Path
from typing import Iterator, Protocol


class Confinement(Protocol):
    """The checks a server makes: each raises a `BiaslensError` for a path outside its allowed folders."""

    def check_data(self, path: str | Path) -> None: ...

    def check_model_files(self, folder: Path) -> None: ...


#: The rules in effect in this thread or task (`confined`); None: any file may be read.
_IN_EFFECT: ContextVar[Confinement | None] = ContextVar("biaslens_confinement", default=None)


@contextlib.contextmanager
def confined(rules: Confinement) -> Iterator[None]:
    """Within this block (in this thread), every data file and local model folder opened is checked by `rules`."""
    token = _IN_EFFECT.set(rules)
    try:
        yield
    finally:
        _IN_EFFECT.reset(token)


def confine_data_file(path: Path) -> None:
    """Refuse a data file outside the allowed folders of the rules in effect (none: any file may be read)."""
    rules = _IN_EFFECT.get()
    if rules is not None:
        rules.check_data(path)


def confine_model_folder(folder: Path) -> None:
    """Refuse a local model folder with a file outside the allowed folders of the rules in effect (none: any)."""
    rules = _IN_EFFECT.get()
    if rules is not None:
        rules.check_model_files(folder)
