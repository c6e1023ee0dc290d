"""`biaslens app`: the web app (Streamlit), started as `bash scripts/app.sh` starts it.

The app's files (app.py, pages/, ui/, assets/, docs/) are those of the checkout this biaslens runs from (a source or
editable install: `bash scripts/setup.sh`), else the copy a wheel installs under `<prefix>/share/biaslens/app`
(pyproject.toml's data-files). Streamlit comes with the extra `app` (`pip install "biaslens[app]"`).

Any `--section.option value` is Streamlit's own (`biaslens app --server.port 8502`); the app's settings in
`.streamlit/config.toml` are passed as such options, so they apply whatever folder the command runs in. Without
`--server.address` the app listens on this machine only and opens the user's own folders (BIASLENS_LOCAL=on, as
scripts/app.sh does; docs/app.md); with one (`--server.address 0.0.0.0`) it is a shared server and opens only the
folders its operator allows (docs/operators.md).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import site
import sys
import sysconfig
from pathlib import Path
from typing import Any

from biaslens.cli.common import add_command
from biaslens.errors import InputError

#: Where a wheel puts the app's files, below an installation's data folder.
SHARED_APP = Path("share") / "biaslens" / "app"


def register(sub: Any) -> argparse.ArgumentParser:
    p = add_command(sub, "app", cmd_app, model=None)
    p.description = (
        "Start the web app on http://localhost:8501 (this machine only). Streamlit's own options pass through, e.g. "
        "--server.port 8502, or --server.address 0.0.0.0 for a shared server (docs/operators.md)."
    )
    p.set_defaults(passes_through=True)  # `main` hands the options it does not know to Streamlit (`args.extra`)
    return p


def app_folder() -> Path:
    """The folder holding the app's `app.py`: the checkout this biaslens runs from, else the copy a wheel installed."""
    checkout = Path(__file__).resolve().parents[2]
    candidates = [checkout, *(Path(base) / SHARED_APP for base in (sysconfig.get_path("data"), sys.prefix, site.getuserbase()))]
    for folder in candidates:
        if (folder / "app.py").is_file() and (folder / "pages").is_dir() and (folder / "ui").is_dir():
            return folder
    raise InputError('The app\'s files are not installed with this biaslens: install it with its app, pip install "biaslens[app]".')


def config_options(folder: Path, given: list[str]) -> list[str]:
    """The app's `.streamlit/config.toml` as Streamlit options (`--server.fileWatcherType none`), less those in `given`."""
    import tomllib

    path = folder / ".streamlit" / "config.toml"
    if not path.is_file():
        return []
    options: list[str] = []
    for section, values in tomllib.loads(path.read_text(encoding="utf-8")).items():
        for key, value in values.items():
            name = f"--{section}.{key}"
            if not any(g == name or g.startswith(name + "=") for g in given):
                options += [name, str(value).lower() if isinstance(value, bool) else str(value)]
    return options


def command(extra: list[str]) -> tuple[list[str], dict[str, str]]:
    """The command line that starts the app with Streamlit options `extra`, and its environment."""
    if importlib.util.find_spec("streamlit") is None:
        raise InputError('The app needs Streamlit, which biaslens installs with its app: pip install "biaslens[app]".')
    folder = app_folder()
    env = dict(os.environ)
    extra = list(extra)
    if not any(a == "--server.address" or a.startswith("--server.address=") for a in extra):
        extra = ["--server.address", "localhost", *extra]  # this machine only: the user's own folders open
        env.setdefault("BIASLENS_LOCAL", "on")
    return [sys.executable, "-m", "streamlit", "run", str(folder / "app.py"), *config_options(folder, extra), *extra], env


def cmd_app(args: argparse.Namespace) -> int:
    argv, env = command(list(getattr(args, "extra", [])))
    print(f"Starting the biaslens app ({Path(argv[4]).parent}) ...", file=sys.stderr, flush=True)
    os.execve(argv[0], argv, env)  # Streamlit in this process's place: Ctrl+C and a stop signal reach it directly
    return 0  # (not reached)


__all__ = ["SHARED_APP", "app_folder", "cmd_app", "command", "config_options", "register"]
