"""The server operator's settings as the app applies them (AppTest): model folders, limits, the model pool."""

from __future__ import annotations

from pathlib import Path

import shutil
from types import SimpleNamespace

import pytest

from tests.support.app import no_exceptions, run_app, tables, texts
from biaslens.errors import InputError


LONG = "The nurse was very tired after a long night at the hospital, so she went home early."


def test_a_model_folder_outside_the_allowed_ones_is_refused(app_env, model_dirs, tmp_path):
    outside = tmp_path / "elsewhere" / "bert"
    shutil.copytree(model_dirs["bert-cased"], outside)
    at = run_app(params={"model": str(outside), "s1": "A b.", "s2": "A c."})
    no_exceptions(at)
    refusal = f"{outside} is outside the folders this server may load models from"
    assert refusal in texts(at.sidebar.error)
    assert refusal in texts(at.error) and "add the folder to BIASLENS_MODEL_DIRS" in texts(at.error)
    assert at.title[0].value == "Pair inspector"  # the page itself still works


def test_on_one_s_own_machine_one_s_own_folders_load_and_a_refusal_says_how(app_env, model_dirs, tmp_path, monkeypatch):
    """Issue 30, item 4: the README's offline advice ("name a local folder") was refused in the app started with
    `bash scripts/app.sh`, telling the user to ask an operator. That run is on the user's own machine: BIASLENS_LOCAL=on
    (which scripts/app.sh sets, binding the app to this machine) opens their folders; elsewhere the refusal gives the line."""
    import streamlit as st

    outside = tmp_path / "elsewhere" / "bert"
    shutil.copytree(model_dirs["bert-cased"], outside)
    link = {"model": str(outside), "s1": "A b.", "s2": "A c."}
    refused = run_app(params=link)
    assert "On your own machine, start the app with" in texts(refused.error) and "bash scripts/app.sh" in texts(refused.error)

    import ui.resources

    ui.resources._failures().entries.clear()  # (a server's settings never change while it runs: its refusals are remembered)
    monkeypatch.setenv("BIASLENS_LOCAL", "on")
    monkeypatch.setattr(st, "get_option", lambda name, _real=st.get_option: "localhost" if name == "server.address" else _real(name))
    at = run_app(params=link)
    no_exceptions(at)
    assert not at.main.error, texts(at.main.error)
    assert "outside the folders" not in texts(at.sidebar.error)
    assert "Loaded" in texts(at.sidebar.caption)


def test_a_folder_named_in_the_configuration_loads(app_env, model_dirs, tmp_path, monkeypatch):
    outside = tmp_path / "elsewhere" / "bert"
    shutil.copytree(model_dirs["bert-cased"], outside)
    monkeypatch.setenv("BIASLENS_MODEL_DIRS", f"{model_dirs['bert-cased'].parent}:{tmp_path / 'elsewhere'}")
    at = run_app(params={"model": str(outside), "s1": "A b.", "s2": "A c."})
    no_exceptions(at)
    assert not at.main.error  # (the sidebar says the random model looks untrained)
    assert "Loaded" in texts(at.sidebar.caption)


def test_sentences_over_the_servers_limit_are_refused_with_the_limit(app_env, monkeypatch, tiny_bert):
    monkeypatch.setenv("BIASLENS_MAX_TOKENS", "12")
    at = run_app(params={"s1": LONG, "s2": LONG.replace("she", "he")})
    no_exceptions(at)
    assert "this server (BIASLENS_MAX_TOKENS) accepts at most 12" in texts(at.error)
    assert "up to 12 tokens" in texts(at.sidebar.caption)
    assert "Sanity check failed" not in texts(at.sidebar.warning)  # the check's own sentences are not users' input
    at = run_app(params={"s1": "She was tired.", "s2": "He was tired."})  # short sentences still score
    no_exceptions(at)
    assert not at.main.error and any("Margin (stereo − anti)" in t.columns for t in tables(at))


def test_a_dataset_outside_the_allowed_folders_is_refused(app_env, monkeypatch, tmp_path):
    pairs = tmp_path / "mine" / "pairs.csv"
    pairs.parent.mkdir()
    pairs.write_text("sent_more,sent_less\nWomen are kind.,Men are kind.\n")
    refusal = "is outside the folders this server may read datasets from"
    at = run_app(params={"dataset": str(pairs)})
    no_exceptions(at)
    assert f"{pairs} {refusal}" in texts(at.error) and "BIASLENS_DATA_DIRS" in texts(at.error)
    at = run_app(params={"data_dir": "/etc"})  # a data folder too, for the built-in datasets
    no_exceptions(at)
    assert f"/etc {refusal}" in texts(at.error)
    monkeypatch.setenv("BIASLENS_DATA_DIRS", str(tmp_path / "mine"))
    at = run_app(params={"dataset": str(pairs)})
    no_exceptions(at)
    assert not at.main.error, texts(at.main.error)
    assert at.subheader[0].value.startswith("pairs #0")  # the file loads (named after the file, never "custom")


def test_a_users_pairs_file_over_the_row_limit_is_refused(app_env, monkeypatch, tmp_path):
    monkeypatch.setenv("BIASLENS_MAX_UPLOAD_ROWS", "5")
    monkeypatch.setenv("BIASLENS_DATA_DIRS", str(tmp_path))
    pairs = tmp_path / "mine.csv"
    rows = [f"Person {i} is kind.,Person {i} is cruel." for i in range(6)]
    pairs.write_text("sent_more,sent_less\n" + "\n".join(rows) + "\n")
    at = run_app(params={"dataset": str(pairs)})
    no_exceptions(at)
    assert "mine.csv has 6 rows; this server accepts at most 5 per file or pasted list (BIASLENS_MAX_UPLOAD_ROWS)" in texts(at.error)
    at = run_app()  # the built-in datasets are not users' files: CrowS-Pairs' 1,508 pairs still load
    no_exceptions(at)
    assert at.subheader[0].value.startswith("crows-pairs #0")


def test_an_uploaded_list_over_the_row_limit_is_refused(app_env, monkeypatch):
    import ui.resources

    monkeypatch.setenv("BIASLENS_MAX_UPLOAD_ROWS", "3")
    ok = SimpleNamespace(name="traits.txt", getvalue=lambda: b"kind\nsmart\nlazy\n")
    assert ui.resources.upload_bytes(ok) == b"kind\nsmart\nlazy\n"
    big = SimpleNamespace(name="traits.txt", getvalue=lambda: b"kind\nsmart\nlazy\nrude\n")
    with pytest.raises(InputError, match="traits.txt has 4 rows; this server accepts at most 3"):
        ui.resources.upload_bytes(big)


def test_a_pasted_list_over_the_row_limit_is_refused(app_env, monkeypatch):
    import ui.resources

    monkeypatch.setenv("BIASLENS_MAX_UPLOAD_ROWS", "3")
    assert ui.resources.pasted_words("Kind\nsmart, lazy", "The pasted list", lowercase=True) == ("kind", "smart", "lazy")
    with pytest.raises(InputError, match="The pasted list has 4 rows; this server accepts at most 3"):
        ui.resources.pasted_words("kind, smart, lazy, rude", "The pasted list")  # commas separate too


def test_the_model_pool_keeps_at_most_the_configured_number(app_env, monkeypatch, model_dirs):
    import ui.resources

    monkeypatch.setenv("BIASLENS_MAX_MODELS", "1")
    ui.resources.MODELS.clear()
    bert, roberta = str(model_dirs["bert-cased"]), str(model_dirs["roberta"])
    at = run_app(params={"s1": "She was tired.", "s2": "He was tired."})
    no_exceptions(at)
    assert [k[0].name for k in ui.resources.MODELS.keys()] == [str(Path(bert).resolve())]  # keyed by identity (issue 36)
    evictions = ui.resources.MODELS.evictions
    at = run_app(params={"model": roberta, "s1": "She was tired.", "s2": "He was tired."})
    no_exceptions(at)
    assert not at.main.error and "roberta" in texts(at.sidebar.caption)
    assert [k[0].name for k in ui.resources.MODELS.keys()] == [str(Path(roberta).resolve())]
    assert ui.resources.MODELS.evictions == evictions + 1


def test_a_bad_setting_is_a_message_naming_the_variable(app_env, monkeypatch):
    monkeypatch.setenv("BIASLENS_MAX_MODELS", "many")
    at = run_app(params={"s1": "She was tired.", "s2": "He was tired."})
    no_exceptions(at)
    assert "BIASLENS_MAX_MODELS='many' is not a whole number" in texts(at.sidebar.error)


def test_an_unusable_cache_folder_is_reported_and_the_run_completes(app_env, monkeypatch, tmp_path):
    import ui.resources

    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("BIASLENS_CACHE_DIR", str(blocker / "cache"))  # cannot be created, even by root
    ui.resources.result_cache.clear()
    at = run_app("explorer", {"sample": "8", "metrics": ["aul"], "metric": "aul"})
    at.button(key="explorer.run").click().run()
    no_exceptions(at)
    assert "continuing without caching" in texts(at.warning)
    assert any(m.label == "AUL bias score" for m in at.metric)  # the run finished all the same


# -- issue 22: every file opened for a user resolves inside the allowed folders; one-line refusals ----------

SECRET = "The outside file's secret sentence"


def _everything_shown(at) -> str:
    from tests.support.app import html_of

    shown = [texts(getattr(at, kind)) for kind in ("markdown", "caption", "subheader", "error", "warning", "info", "code", "text_input", "text_area")]
    return "\n".join([*shown, html_of(at), *(str(d.value) for d in at.dataframe)])


def test_a_dataset_found_through_a_link_out_of_an_allowed_folder_is_refused_unread(app_env, monkeypatch, tmp_path):
    outside = tmp_path / "outside" / "crows.csv"
    outside.parent.mkdir()
    outside.write_text(f"sent_more,sent_less,stereo_antistereo,bias_type,annotations\n{SECRET} she.,{SECRET} he.,stereo,gender,\"[['gender']]\"\n")
    sub = tmp_path / "allowed" / "sub"
    sub.mkdir(parents=True)
    (sub / "crows_pairs_anonymized.csv").symlink_to(outside)
    monkeypatch.setenv("BIASLENS_DATA_DIRS", str(tmp_path / "allowed"))
    at = run_app(params={"data_dir": str(sub), "dataset": "crows-pairs"})
    no_exceptions(at)
    refusal = "crows_pairs_anonymized.csv is outside the folders this server may read datasets from (a link leads out of them)"
    assert refusal in texts(at.error)
    assert SECRET not in _everything_shown(at)


def test_a_model_folder_whose_weights_link_out_of_an_allowed_folder_is_refused(app_env, model_dirs, monkeypatch, tmp_path):
    folder = shutil.copytree(model_dirs["bert-cased"], tmp_path / "allowed" / "bert")
    outside = shutil.copytree(model_dirs["bert-cased"], tmp_path / "outside" / "bert")
    (folder / "model.safetensors").unlink()
    (folder / "model.safetensors").symlink_to(outside / "model.safetensors")
    monkeypatch.setenv("BIASLENS_MODEL_DIRS", f"{model_dirs['bert-cased'].parent}:{tmp_path / 'allowed'}")
    at = run_app(params={"model": str(folder), "s1": "A b.", "s2": "A c."})
    no_exceptions(at)
    refusal = f"{folder / 'model.safetensors'} is outside the folders this server may load models from (a link leads out of them)"
    assert refusal in texts(at.error)


def test_a_loop_of_links_in_an_allowed_model_folder_is_one_line(app_env, model_dirs, monkeypatch, tmp_path):
    folder = shutil.copytree(model_dirs["bert-cased"], tmp_path / "allowed" / "bert")
    (folder / "a").symlink_to(folder / "b")
    (folder / "b").symlink_to(folder / "a")
    monkeypatch.setenv("BIASLENS_MODEL_DIRS", f"{model_dirs['bert-cased'].parent}:{tmp_path / 'allowed'}")
    at = run_app(params={"model": str(folder), "s1": "A b.", "s2": "A c."})
    no_exceptions(at)
    assert f"{folder / 'a'} is a symbolic link that leads back to itself (a loop of links), so it names no file: remove it." in texts(at.error)
    assert "Unexpected error" not in _everything_shown(at)  # ("Unexpected error (RuntimeError): Symlink loop from ...")


def test_an_allowed_folder_that_is_a_loop_of_links_is_one_line_naming_the_setting(app_env, model_dirs, monkeypatch, tmp_path):
    """BIASLENS_MODEL_DIRS naming a link to itself: "Unexpected error (RuntimeError): Symlink loop from ..." on every page."""
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    monkeypatch.setenv("BIASLENS_MODEL_DIRS", f"{model_dirs['bert-cased'].parent}:{tmp_path / 'loop'}")
    at = run_app(params={"s1": "She was tired.", "s2": "He was tired."})
    no_exceptions(at)
    said = (
        f"BIASLENS_MODEL_DIRS lists {tmp_path / 'loop'}, which is a symbolic link that leads back to itself (a loop of links), so it names no folder"
    )
    assert said in texts(at.sidebar.error) and "Unexpected error" not in _everything_shown(at)


def test_a_300_character_model_name_is_a_one_line_error(app_env):
    at = run_app(params={"model": "a" * 300, "s1": "A b.", "s2": "A c."})
    no_exceptions(at)
    assert "is not a hub id: its parts are at most 96 characters" in texts(at.error)
    assert "Unexpected error" not in _everything_shown(at)


def test_a_typed_sentence_with_a_nul_is_refused(app_env):
    at = run_app(params={"s1": "She was\x00 tired.", "s2": "He was tired."})
    no_exceptions(at)
    assert "sentence contains the control character U+0000 (NUL) at character 8: remove it." in texts(at.error)


def test_a_model_folder_fixed_or_replaced_in_place_is_loaded_afresh(app_env, model_dirs, tmp_path, monkeypatch):
    """Issue 40 item 9: a folder fixed in place still showed its old load error until *Retry loading* was pressed; a folder
    whose model was replaced kept serving the old one from the pool."""

    folder = tmp_path / "mine" / "model"
    folder.mkdir(parents=True)
    (folder / "config.json").write_text("{not json", encoding="utf-8")  # a broken save
    monkeypatch.setenv("BIASLENS_MODEL_DIRS", str(tmp_path / "mine"))
    link = {"model": str(folder), "s1": "She was tired.", "s2": "He was tired."}
    broken = run_app(params=link)
    no_exceptions(broken)
    assert broken.sidebar.error, "the broken folder loads"
    shutil.rmtree(folder)
    shutil.copytree(model_dirs["bert-cased"], folder)  # fixed in place: the same path, now a model
    fixed = run_app(params=link)
    no_exceptions(fixed)
    assert not fixed.sidebar.error and not fixed.main.error, texts(fixed.sidebar.error)
    assert _pooled(folder) == ["bert"]
    shutil.rmtree(folder)
    shutil.copytree(model_dirs["roberta"], folder)  # replaced by another model
    again = run_app(params=link)
    no_exceptions(again)
    assert _pooled(folder) == ["roberta"]  # the new one, the old one let go


def _pooled(folder: Path) -> list[str]:
    """The model types the app's pool holds for `folder`."""
    import ui.resources

    keys = [k for k in ui.resources.MODELS.keys() if k[0].name == str(folder.resolve())]
    return [ui.resources.MODELS.get(k, lambda: None).model_type for k in keys]
