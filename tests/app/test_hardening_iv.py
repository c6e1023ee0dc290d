"""Hardening IV in the app (issue 36): NUL bytes in links, a refused pinned data folder, two models not on the machine in
the inspector, lab group words checked before training. The comparison's cases are in test_compare_page.py, the escaping
of addresses in test_injection.py."""

from __future__ import annotations

import pytest

from tests.support.app import no_exceptions, run_app, texts


@pytest.mark.parametrize("name", ["model", "dataset", "data_dir"])
def test_a_nul_byte_in_a_link_value_is_one_clear_line(app_env, name):
    at = run_app("inspector", {name: "/tmp/x\x00y" if name != "model" else "abc\x00"})
    no_exceptions(at)
    errors = texts(at.error)
    assert "holds a NUL character, which no file or folder name holds" in errors
    assert "Unexpected error" not in errors and "embedded null byte" not in errors


def test_a_refused_pinned_data_folder_gets_its_message_only(app_env):
    at = run_app("inspector", {"pin.data_dir": "/etc", "pin.pair": "5"})
    no_exceptions(at)
    assert "/etc is outside the folders this server may read datasets from" in texts(at.error)
    assert "pinned pair #5 is not in" not in texts(at.warning)  # (it was: the data folder was refused, not the pair)


def test_two_models_not_on_this_machine_beside_a_pair_offer_the_lab_model_once(app_env, monkeypatch):
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    at = run_app("inspector", {"models": ["org/a", "org/b"], "pair": "1"})
    no_exceptions(at)  # (StreamlitDuplicateElementKey: settings.offline_lab.main)
    assert [b.label for b in at.main.button].count("Use the offline lab model") == 1


def test_lab_group_words_are_refused_before_a_job_starts(app_env, monkeypatch):
    import biaslens.lab.store

    monkeypatch.setattr(biaslens.lab.store, "_train", lambda *a, **k: pytest.fail("trained before the words were checked"))
    at = run_app("lab", {"scenario": "association"}, {"lab.group_a": "[MASK], [SEP]", "lab.group_b": "x, y"})
    no_exceptions(at)
    assert "group_a contains" in texts(at.error) and "MASK" in texts(at.error)
