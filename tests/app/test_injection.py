"""Text from a link, a file or another user's lab model shows as text, never as markdown (issue 21 journey 9, issue 22).

A shared link is the easiest way to put text into someone else's page, and a lab model trained by one user is
listed for every user: a revision, a bias type or a lab group's label holding `[t](http://…)`, an image or
`:red[…]` must reach the page escaped (`ui.feedback.md`). Each test renders what the page sends as markdown
(`tests.support.app.live_markup`, CommonMark plus Streamlit's colour directives); tests/browser/test_escaping.py
checks the same in Chromium.
"""

from __future__ import annotations

import pytest

from biaslens import lab
from tests.support.app import live_markup, markdown_texts, no_exceptions, run_app

LINK = "[Session expired, log in again](http://evil.example/login)"
IMAGE = "![x](http://evil.example/img.png)"
#: Payloads: a link and an image; the same after a backtick, which closed the inline code the sidebar put a revision in.
REVISIONS = [f"{LINK} {IMAGE}", f"main` {LINK} {IMAGE} `x"]
LABEL = "[t](http://evil.example/t) :red[boom]"


@pytest.mark.parametrize("revision", REVISIONS, ids=["link", "closes-inline-code"])
def test_a_revision_from_a_link_shows_as_text_in_the_model_details(app_env, revision):
    at = run_app("inspector", {"revision": revision})
    no_exceptions(at)
    details = [c.value for c in at.sidebar.caption if "revision" in c.value]
    assert details, "the sidebar's Model details name the revision"
    assert not live_markup(details), details
    assert not live_markup(markdown_texts(at))


@pytest.fixture
def lab_model_with_hostile_labels(app_env):
    """A lab model another user trained, its group and attribute labels written to inject markdown."""
    settings = lab.scenario_settings(
        "association",
        lab.LabSettings(
            corpus_size=600,
            steps=12,
            batch_size=32,
            group_a_label=f"A {LABEL}",
            group_b_label=f"B {IMAGE}",
            attributes_x_label=f"X {LABEL}",
            attributes_y_label=f"Y {LINK}",
        ),
    )
    return lab.train_lab_model(settings)


def test_a_lab_model_s_labels_show_as_text_in_the_inspector(lab_model_with_hostile_labels):
    model = lab_model_with_hostile_labels
    at = run_app(params={"model": str(model.path), "dataset": str(model.path / lab.PAIRS_FILE)})
    no_exceptions(at)
    heading = at.subheader[0].value
    assert heading.startswith("lab pairs #0 · X") and "boom" in heading
    assert not live_markup(markdown_texts(at))


def test_a_lab_model_s_labels_show_as_text_on_the_lab_page(lab_model_with_hostile_labels):
    s = lab_model_with_hostile_labels.settings
    state = {f"lab.{name}": getattr(s, name) for name in ("group_a_label", "group_b_label", "attributes_x_label", "attributes_y_label")}
    at = run_app("lab", {"scenario": "association", "corpus": "600", "steps": "12"}, {**state, "lab.batch": 32})
    no_exceptions(at)
    assert "Found in the cache, not retrained" in " ".join(str(e.value) for e in at.success)
    texts = markdown_texts(at)
    assert any("boom" in t for t in texts)  # the labels are on the page (the caption under the results), as text
    assert not live_markup(texts)


# ---------------------------------------------------------------------------------------
# Addresses that GitHub-flavoured markdown links by itself (issue 36, item 1)
# ---------------------------------------------------------------------------------------

#: Text shaped like an address: Streamlit's markdown made a live link of each (after backslash escapes are gone).
AUTOLINKS = "www.evil.example/login x@evil.example http://evil.example/a mailto:y@evil.example xmpp:z@evil.example/r"
#: Every parameter the attack found quoted in a message, heading or caption, by page (`pin.*`: the inspector's pinned pair).
LINKED_PARAMETERS = [
    ("inspector", "model"),
    ("inspector", "pair"),
    ("inspector", "metric"),
    ("inspector", "classroom"),
    ("inspector", "dataset"),
    ("inspector", "data_dir"),
    ("inspector", "revision"),
    ("inspector", "pin.model"),
    ("inspector", "pin.pair"),
    ("compare", "models"),
    ("compare", "sample"),
    ("explorer", "metrics"),
    ("explorer", "tab"),
    ("lab", "scenario"),
    ("analyses", "seed"),
]


@pytest.mark.parametrize("page, name", LINKED_PARAMETERS, ids=[f"{p}-{n}" for p, n in LINKED_PARAMETERS])
def test_an_address_in_a_link_value_shows_as_text(app_env, page, name):
    value = [AUTOLINKS, f"{AUTOLINKS} 2"] if name == "models" else AUTOLINKS  # (a comparison names two models)
    params = {name: value, **({"pin.pair": "0"} if name == "pin.model" else {})}
    at = run_app(page, params)
    no_exceptions(at)
    texts = markdown_texts(at)
    assert any("evil.example" in t for t in texts), "the value is quoted on the page"
    assert not live_markup(texts), live_markup(texts)


@pytest.mark.parametrize("bias_type, shown", [(LABEL, ("boom", "evil.example")), (AUTOLINKS, ("evil.example",))], ids=["markdown", "addresses"])
def test_a_bias_type_from_a_file_shows_as_text_in_the_inspector(app_env, tmp_path, monkeypatch, bias_type, shown):
    """A bias type holding markdown (a link, a colour) or text shaped like addresses, from a pairs file."""
    path = tmp_path / "pairs.csv"
    path.write_text(f'sent_more,sent_less,bias_type\n"She can fix it.","He can fix it.","{bias_type}"\n', encoding="utf-8")
    monkeypatch.setenv("BIASLENS_DATA_DIRS", str(tmp_path))
    at = run_app(params={"dataset": str(path)})
    no_exceptions(at)
    heading = at.subheader[0].value
    assert all(word in heading for word in shown)  # shown, as text
    assert not live_markup([heading])
    assert not live_markup(markdown_texts(at))
