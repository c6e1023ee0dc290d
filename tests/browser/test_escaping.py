"""A markdown/HTML payload in every URL parameter of every page renders as text, in a real browser (issue 17).

A shared link is the easiest way to put text into someone else's page: `/?model=[Session
expired](http://evil.example/login)` must show the brackets, not a live link inside the app's
own error message. The app is served by `streamlit run app.py` and opened in headless Chromium;
requests to anywhere but the app (evil.example included) are blocked and recorded.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from urllib.parse import urlencode, urlparse

import pytest

from tests.support import FIXTURE_DATA
from tests.support.browser import launch_chromium, require_browser, serve_app, server_env

pytestmark = pytest.mark.browser

LINK = "[Session expired - click to log in](http://evil.example/login)"
#: Addresses GitHub-flavoured markdown links by itself (issue 36): www., http(s)://, e-mail, mailto:, xmpp:, an angle autolink.
AUTOLINKS = "www.evil.example/login x@evil.example https://evil.example/a. mailto:y@evil.example xmpp:z@evil.example <ftp://evil.example/f>"
PAYLOAD = (
    f'{LINK} ![i](http://evil.example/i.png) <img src="http://evil.example/h.png"> <b id="bl-injected">x</b> **pwned** '
    f":material/home: $x^2$ {AUTOLINKS}"
)

#: The settings every page adopts from a link, and each page's own parameters.
GLOBAL = ("model", "dataset", "compat", "device", "dtype", "revision", "data_dir", "classroom")
PAGES = {
    "inspector": ("s1", "s2", "pair", "metric", "pin.model", "pin.pair"),
    "explorer": ("metrics", "metric", "sample", "seed", "tab"),
    "compare": ("models", "metric", "sample", "seed"),
    "leaderboard": ("store", "sort", "bias_type", "families", "kinds", "sizes"),
    "kurita": ("templates", "targets"),
    "lab": ("scenario", "association", "ratio", "corpus", "steps", "seed"),
    "analyses": ("sample", "seed", "metric"),
}


@pytest.fixture(scope="module")
def app_url(model_dirs, tmp_path_factory):
    require_browser()
    logs = tmp_path_factory.mktemp("escaping-server")
    env = server_env(logs, model=model_dirs["bert-cased"], data_dir=FIXTURE_DATA)
    with serve_app(env, logs) as base:
        yield base


@pytest.fixture(scope="module")
def chromium():
    with launch_chromium() as browser:
        yield browser


@contextlib.contextmanager
def _guarded_page(chromium):
    """A fresh page whose requests to anywhere but the local app are blocked and recorded: yields (page, the blocked URLs)."""
    context = chromium.new_context(viewport={"width": 1400, "height": 1200})
    requested: list[str] = []

    def only_local(route):
        if urlparse(route.request.url).hostname in ("127.0.0.1", "localhost", "::1"):
            route.continue_()
        else:
            requested.append(route.request.url)
            route.abort()

    context.route("**/*", only_local)
    page = context.new_page()
    page.set_default_timeout(120_000)
    try:
        yield page, requested
    finally:
        context.close()


def _settle(page) -> None:
    """Wait until the app has drawn its sidebar and its script has stopped running (twice in a row, a second apart)."""
    page.wait_for_selector('[data-testid="stSidebar"] [data-testid="stTextInput"], [data-testid="stSidebar"] [data-testid="stSelectbox"]')
    idle = "() => document.querySelector('[data-testid=\"stApp\"]').getAttribute('data-test-script-state') !== 'running'"
    for _ in range(2):
        page.wait_for_timeout(1000)
        page.wait_for_function(idle, timeout=120_000)


def _injected(page) -> list[str]:
    """What of the payload the page turned into markup."""
    return page.evaluate("""() => {
        const found = [];
        const host = (u) => { try { return new URL(u, location.href).hostname; } catch (e) { return ''; } };
        const scheme = (u) => { try { return new URL(u, location.href).protocol; } catch (e) { return ''; } };
        for (const a of document.querySelectorAll('a[href]'))  // (a mailto: or xmpp: link has no host: its address is in the href)
            if (host(a.href).includes('evil.example') || (!/^https?:$/.test(scheme(a.href)) && a.href.toLowerCase().includes('evil.example')))
                found.push('link ' + a.href);
        for (const i of document.querySelectorAll('img')) if (host(i.src || '').includes('evil.example')) found.push('image ' + i.src);
        if (document.getElementById('bl-injected')) found.push('html element');
        for (const s of document.querySelectorAll('strong, b, em')) if (s.textContent.trim() === 'pwned') found.push('emphasis');
        for (const k of document.querySelectorAll('.katex')) if (k.textContent.includes('x2')) found.push('formula');
        return found;
    }""")


@pytest.mark.parametrize("with_model", [False, True], ids=["every-parameter", "page-parameters"])
@pytest.mark.parametrize("path", list(PAGES))
def test_a_payload_in_every_url_parameter_renders_as_text(chromium, app_url, path, with_model):
    names = PAGES[path] + (() if with_model else GLOBAL)
    with _guarded_page(chromium) as (page, requested):
        page.goto(f"{app_url}/{path}?{urlencode({n: PAYLOAD for n in names})}")
        _settle(page)
        text = page.inner_text('[data-testid="stApp"]').replace("\u200b", "")  # md() breaks shortcodes with zero-width spaces
        if os.environ.get("BIASLENS_DUMP_PAGES"):
            Path(os.environ["BIASLENS_DUMP_PAGES"], f"{path}-{with_model}.txt").write_text(text)
        assert _injected(page) == [], text[-3000:]
        assert requested == []
        assert "Traceback" not in text
        if not with_model and path == "inspector":  # the model's error message quotes the link, as text
            assert LINK in text


# ---------------------------------------------------------------------------------------
# Text from data: a revision beside a model that loads, a file's bias type, another user's lab model (issue 21, journey 9)
# ---------------------------------------------------------------------------------------

LABEL = "[t](http://evil.example/t) :red[boom] www.evil.example/t x@evil.example"
#: A revision that closes the inline code the sidebar's Model details once put it in.
REVISION = "main` [Session expired, log in again](http://evil.example/login) ![x](http://evil.example/img.png) `x"


@pytest.fixture(scope="module")
def hostile_app(model_dirs, tmp_path_factory):
    """The app with a pairs file whose bias type is a payload and a lab model whose labels are, in its lab cache."""
    import csv
    import shutil

    from biaslens import lab

    require_browser()
    logs = tmp_path_factory.mktemp("hostile-server")
    data = logs / "data"
    shutil.copytree(FIXTURE_DATA, data)
    with (data / "hostile.csv").open("w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows([["sent_more", "sent_less", "bias_type"], ["She can fix it.", "He can fix it.", LABEL]])
    labels = {"group_a_label": f"A {LABEL}", "attributes_x_label": f"X {LABEL}", "attributes_y_label": "Y ![i](http://evil.example/y.png)"}
    settings = lab.scenario_settings("association", lab.LabSettings(corpus_size=600, steps=12, batch_size=32, **labels))
    model = lab.train_lab_model(settings, cache_dir=logs / "cache" / "lab")  # the server's lab cache
    env = server_env(logs, model=model_dirs["bert-cased"], data_dir=data)
    with serve_app(env, logs) as base:
        yield base, data / "hostile.csv", model.path / lab.PAIRS_FILE


def _colour_directives(page) -> list[str]:
    """Text of the payload drawn in a colour (Streamlit's `:red[…]`)."""
    return page.evaluate("""() => [...document.querySelectorAll('[data-testid="stApp"] span')]
        .filter(s => /color/.test((s.getAttribute('style') || '') + ' ' + s.className) && s.textContent.includes('boom'))
        .map(s => s.outerHTML.slice(0, 120))""")


@pytest.mark.parametrize("case", ["revision", "bias-type", "lab-labels"])
def test_text_from_data_renders_as_text(chromium, hostile_app, case):
    base, pairs_file, lab_pairs = hostile_app
    params = {
        "revision": {"revision": REVISION},
        "bias-type": {"dataset": str(pairs_file)},
        "lab-labels": {"model": str(lab_pairs.parent), "dataset": str(lab_pairs)},
    }[case]
    with _guarded_page(chromium) as (page, requested):
        page.goto(f"{base}/?{urlencode(params)}")
        _settle(page)
        if case == "revision":  # the Model details, opened
            page.locator('[data-testid="stSidebar"] [data-testid="stExpander"] summary').filter(has_text="Model details").click()
            _settle(page)
        else:  # the pair's heading names the bias type (the lab's attribute label)
            page.locator('[data-testid="stMain"] h3').filter(has_text="boom").first.wait_for()
        text = page.inner_text('[data-testid="stApp"]').replace("\u200b", "")
        assert _injected(page) == [], text[-3000:]
        assert _colour_directives(page) == []
        assert requested == []
        assert "evil.example" in text  # shown, as text
