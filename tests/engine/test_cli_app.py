"""`biaslens app` (issue 40 item 11): the web app started from any folder, as `bash scripts/app.sh` starts it."""

from __future__ import annotations

import os
import subprocess
import sys
import urllib.request

import pytest

from biaslens.cli import app
from biaslens.cli.main import main
from tests.support import REPO
from tests.support.browser import free_port, wait_until_healthy


def test_the_app_runs_from_the_checkout_with_its_settings_on_this_machine_only():
    assert app.app_folder() == REPO  # a source or editable install: the checkout's own files
    argv, env = app.command(["--server.port", "8502"])
    assert argv[:5] == [sys.executable, "-m", "streamlit", "run", str(REPO / "app.py")]
    assert argv[argv.index("--server.address") + 1] == "localhost" and env["BIASLENS_LOCAL"] == "on"
    assert argv[argv.index("--server.fileWatcherType") + 1] == "none"  # .streamlit/config.toml, whatever the folder
    assert argv[argv.index("--client.showErrorDetails") + 1] == "type" and argv[-2:] == ["--server.port", "8502"]
    shared, env = app.command(["--server.address", "0.0.0.0", "--server.fileWatcherType=poll"])
    assert shared.count("--server.address") == 1 and "--server.fileWatcherType" not in shared  # the caller's own option wins
    assert env.get("BIASLENS_LOCAL") == os.environ.get("BIASLENS_LOCAL")  # a shared server: its operator's folders


def test_other_commands_still_refuse_an_unknown_option(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["metrics", "--server.port", "1"])
    assert stop.value.code == 2 and "unrecognized arguments: --server.port 1" in capsys.readouterr().err


def test_biaslens_app_serves_the_app_from_another_folder(tmp_path, model_dirs):
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(REPO), "BIASLENS_MODEL": str(model_dirs["bert-cased"]), "BIASLENS_CACHE_DIR": str(tmp_path / "c")}
    with (tmp_path / "app.log").open("w") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "biaslens", "app", "--server.port", str(port), "--server.headless", "true"],
            cwd=tmp_path,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        assert wait_until_healthy(f"http://localhost:{port}", proc, 90), (tmp_path / "app.log").read_text()
        with urllib.request.urlopen(f"http://localhost:{port}/", timeout=10) as page:
            assert page.status == 200 and b"<html" in page.read().lower()
    finally:
        proc.terminate()
        proc.wait(timeout=20)
