"""Issue 17: a shared server's limits, counted the way the work is counted, and its line of heavy jobs."""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support import app as app_support
from tests.support.app import no_exceptions, run_app, texts
from biaslens import lab
from biaslens.errors import InputError, JobCancelled, LimitError, ServerConfigError
from biaslens.kurita import parse_word_list
from biaslens.serving.server import JobSlots, ServerSettings, count_word_items

app_support.PAGES.setdefault("kurita", "pages/kurita.py")

# -- settings ---------------------------------------------------------------------------------


def test_the_new_settings_are_read_from_the_environment_and_bad_values_named():
    server = ServerSettings.from_env(
        {
            "BIASLENS_LAB": "off",
            "BIASLENS_LAB_MAX_STEPS": "50",
            "BIASLENS_MAX_JOBS": "1",
            "BIASLENS_MAX_RUN_SCORES": "1_000",
            "BIASLENS_SHARE_LAB_MODELS": "on",
        }
    )
    assert (server.lab_training, server.lab_max_steps, server.max_jobs, server.max_run_scores) == (False, 50, 1, 1000)
    assert server.share_lab_models
    with pytest.raises(ServerConfigError, match="BIASLENS_LAB='maybe' is neither on nor off"):
        ServerSettings.from_env({"BIASLENS_LAB": "maybe"})
    with pytest.raises(ServerConfigError, match="BIASLENS_MAX_JOBS=0 is too small"):
        ServerSettings.from_env({"BIASLENS_MAX_JOBS": "0"})


# -- word lists: rows after parsing, commas included --------------------------------------------

_items = st.text(alphabet="abc xyz#", min_size=0, max_size=6)
_lines = st.lists(st.lists(_items, min_size=1, max_size=5).map(",".join), min_size=0, max_size=12).map("\n".join)


@settings(max_examples=200, deadline=None)
@given(_lines)
def test_word_items_are_counted_as_the_parser_splits_them(text):
    try:
        parsed = parse_word_list(text)
    except InputError:
        assert count_word_items(text) == 0
        return
    repeats = sum(int(n.split()[0]) for n in parsed.notes if "repeated" in n)
    assert count_word_items(text) == len(parsed.words) + repeats


@settings(max_examples=100, deadline=None)
@given(_lines, st.integers(min_value=1, max_value=20))
def test_a_word_list_is_refused_exactly_when_its_items_exceed_the_limit(text, limit):
    server = ServerSettings(max_upload_rows=limit)
    if count_word_items(text) > limit:
        with pytest.raises(InputError, match=f"at most {limit:,} per file"):
            server.check_word_list(text.encode(), "traits.txt")
    else:
        server.check_word_list(text.encode(), "traits.txt")


def test_one_line_of_5000_comma_separated_words_is_5000_rows():
    data = ",".join(f"w{i}" for i in range(5000)).encode()
    with pytest.raises(InputError, match="traits.txt has 5,000 rows; this server accepts at most 100"):
        ServerSettings(max_upload_rows=100).check_word_list(data, "traits.txt")


def test_an_uploaded_word_list_counts_commas_in_the_app(app_env, monkeypatch):
    import ui.resources

    monkeypatch.setenv("BIASLENS_MAX_UPLOAD_ROWS", "100")
    one_line = SimpleNamespace(name="big.txt", getvalue=lambda: ",".join(f"w{i}" for i in range(5000)).encode())
    with pytest.raises(InputError, match="big.txt has 5,000 rows"):
        ui.resources.upload_bytes(one_line)


# -- pairs files refused before they are parsed whole -------------------------------------------


def test_a_huge_pairs_file_is_refused_from_its_first_lines(tmp_path, monkeypatch):
    path = tmp_path / "huge.csv"
    path.write_text("sent_more,sent_less\n" + "A women.,A men.\n" * 359_000)
    lines_read = []
    real_open = type(path).open

    class Counting:
        def __init__(self, handle):
            self.handle = handle

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.handle.close()

        def __iter__(self):
            for n, line in enumerate(self.handle, start=1):
                lines_read.append(n)
                yield line

    monkeypatch.setattr(type(path), "open", lambda self, *a, **k: Counting(real_open(self, *a, **k)))
    with pytest.raises(LimitError, match="has more than 201 lines; this server accepts at most 100 rows"):
        ServerSettings(max_upload_rows=100).check_pairs_file(path, "The pairs file huge.csv")
    assert max(lines_read) == 202  # stopped reading long before the end (359,001 lines)


def test_a_pairs_file_over_the_size_limit_is_refused_before_it_is_read(tmp_path):
    path = tmp_path / "big.json"
    path.write_bytes(b" " * 2_100_000)
    with pytest.raises(LimitError, match="big.json is 2.1 MB; this server reads files up to 2 MB .BIASLENS_MAX_UPLOAD_MB."):
        ServerSettings(max_upload_mb=2).check_pairs_file(path, "The pairs file big.json")
    ServerSettings(max_upload_mb=3).check_pairs_file(path, "x")  # a JSON document's lines are not rows


@settings(max_examples=50, deadline=None)
@given(st.integers(min_value=0, max_value=60), st.integers(min_value=1, max_value=20))
def test_a_pairs_file_passes_the_early_check_whenever_its_rows_are_within_the_limit(rows, limit):
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "p.csv"
        path.write_text("sent_more,sent_less\n" + "A women.,A men.\n" * rows)
        server = ServerSettings(max_upload_rows=limit)
        if rows <= limit:
            server.check_pairs_file(path, "p.csv")  # never refused early when the exact count would pass
        elif rows + 1 > 2 * limit + 1:
            with pytest.raises(LimitError):
                server.check_pairs_file(path, "p.csv")


# -- work caps --------------------------------------------------------------------------------------


@settings(max_examples=100, deadline=None)
@given(st.integers(min_value=0, max_value=10_000), st.integers(min_value=1, max_value=6), st.integers(min_value=1, max_value=30_000))
def test_a_run_is_refused_exactly_when_pairs_times_metrics_exceed_the_cap(pairs, metrics, cap):
    server = ServerSettings(max_run_scores=cap)
    if pairs * metrics > cap:
        with pytest.raises(LimitError, match="BIASLENS_MAX_RUN_SCORES"):
            server.check_run(pairs, metrics)
    else:
        server.check_run(pairs, metrics)


def test_lab_training_can_be_switched_off_and_is_capped():
    with pytest.raises(LimitError, match="Training is switched off on this server .BIASLENS_LAB=off."):
        ServerSettings(lab_training=False).check_lab(lab.LabSettings())
    server = ServerSettings(lab_max_steps=100, lab_max_corpus=1000, lab_max_layers=2, lab_max_hidden=64)
    server.check_lab(lab.LabSettings(steps=100, corpus_size=1000, num_layers=2, hidden_size=64))
    for knobs, fragment in [
        ({"steps": 101}, "Training steps 101 is above this server's limit of 100 (BIASLENS_LAB_MAX_STEPS)"),
        ({"corpus_size": 1_000_000}, "corpus size 1,000,000"),
        ({"num_layers": 24}, "layers 24"),
        ({"hidden_size": 128, "num_heads": 4}, "hidden size 128"),
    ]:
        with pytest.raises(LimitError, match=fragment.replace("(", ".").replace(")", ".")):
            server.check_lab(lab.LabSettings(**{"steps": 10, "corpus_size": 600, **knobs}))


def test_the_lab_wall_time_limit_stops_training():
    check = ServerSettings(lab_max_seconds=5).lab_deadline(started=time.monotonic() - 6)
    with pytest.raises(LimitError, match="Training stopped after 5 s"):
        check()
    ServerSettings(lab_max_seconds=5).lab_deadline()()  # just started: goes on


# -- the line of heavy jobs ---------------------------------------------------------------------------


def test_jobs_beyond_the_capacity_wait_in_line_first_come_first_served():
    slots = JobSlots(capacity=1, max_queue=5)
    order = []
    release = threading.Event()

    def first():
        with slots.slot():
            order.append("first")
            release.wait(10)

    def later(name, seen):
        with slots.slot(on_wait=lambda position, running: seen.append((position, running)), poll=0.02):
            order.append(name)

    t1 = threading.Thread(target=first)
    t1.start()
    while slots.running != 1:
        time.sleep(0.01)
    seen_b, seen_c = [], []
    tb = threading.Thread(target=later, args=("b", seen_b))
    tb.start()
    while slots.waiting != 1:
        time.sleep(0.01)
    tc = threading.Thread(target=later, args=("c", seen_c))
    tc.start()
    while slots.waiting != 2:
        time.sleep(0.01)
    time.sleep(0.1)
    release.set()
    for t in (t1, tb, tc):
        t.join(10)
    assert order == ["first", "b", "c"]
    assert (1, 1) in seen_b and (2, 1) in seen_c  # each saw its place in line and the running job
    assert slots.running == 0 and slots.waiting == 0


def test_a_full_line_refuses_at_once_and_a_cancelled_waiter_leaves_it():
    slots = JobSlots(capacity=1, max_queue=0)
    with slots.slot():
        with pytest.raises(LimitError, match="The server is busy: 1 jobs running and 0 waiting"):
            with slots.slot():
                pass
    slots = JobSlots(capacity=1, max_queue=3)
    with slots.slot():
        with pytest.raises(JobCancelled):
            with slots.slot(cancelled=lambda: True, poll=0.01):
                pass
        assert slots.waiting == 0
    with slots.slot():  # the slot came back
        pass


# -- in the app ------------------------------------------------------------------------------------------


def test_the_lab_page_says_training_is_off_in_one_line(app_env, monkeypatch):
    monkeypatch.setenv("BIASLENS_LAB", "off")
    at = run_app("lab", {"corpus": "600", "steps": "12"}, {"lab.batch": 32})
    at.button(key="lab.train").click().run()
    no_exceptions(at)
    assert "Training is switched off on this server (BIASLENS_LAB=off)" in texts(at.error)


def test_a_dataset_run_over_the_cap_is_refused_in_one_line(app_env, monkeypatch):
    monkeypatch.setenv("BIASLENS_MAX_RUN_SCORES", "30")
    at = run_app("explorer", {"sample": "16", "metrics": ["aul", "cps"]})  # every pair of the fixture CrowS-Pairs
    no_exceptions(at)
    at.button(key="explorer.run").click().run()
    no_exceptions(at)
    assert "16 pairs × 2 metrics = 32 scores; this server runs at most 30 at once (BIASLENS_MAX_RUN_SCORES)" in texts(at.error)


@pytest.mark.parametrize(
    "params,fragment",
    [
        ({"pair": "-1"}, "pair='-1' was not used: expected a pair id"),
        ({"pair": "99999"}, "pair='99999' was not used: expected a pair id of this dataset"),
        ({"metric": "rm -rf"}, "metric='rm -rf' was not used"),
    ],
)
def test_bad_link_values_on_the_inspector_are_reported(app_env, params, fragment):
    at = run_app("inspector", params)
    no_exceptions(at)
    assert fragment in texts(at.warning)


def test_bad_link_values_on_the_explorer_are_reported(app_env):
    at = run_app("explorer", {"metrics": ["aul", "rm -rf"], "sample": "abc"})
    no_exceptions(at)
    warnings = texts(at.warning)
    assert "metrics='rm -rf' was not used" in warnings and "sample='abc' was not used" in warnings


def test_a_watched_job_stops_when_its_session_is_gone(monkeypatch):
    import ui.runs

    calls = []
    progress = ui.runs.watched(lambda done, total: calls.append((done, total)))
    progress(1, 2)  # outside a served app no session can go away
    assert calls == [(1, 2)]
    monkeypatch.setattr(ui.runs, "session_gone", lambda: lambda: True)
    with pytest.raises(JobCancelled, match="the page that started it was closed, or the server is stopping"):
        ui.runs.watched(lambda done, total: calls.append((done, total)))(2, 2)
    assert calls == [(1, 2)]
    deadline = ServerSettings(lab_max_seconds=1).lab_deadline(started=time.monotonic() - 2)
    monkeypatch.setattr(ui.runs, "session_gone", lambda: lambda: False)
    with pytest.raises(LimitError, match="Training stopped after 1 s"):
        ui.runs.watched(None, deadline)(1, 10)


def test_a_watched_job_pauses_while_a_pair_inspection_is_scored():
    import threading

    import ui.resources
    import ui.runs

    calls = []
    step = threading.Thread(target=ui.runs.watched(lambda done, total: calls.append((done, total))), args=(1, 2))
    with ui.resources.priority().interactive():  # what the inspector holds while it scores a pair
        step.start()
        time.sleep(0.3)
        assert calls == []  # the job's next step waits
    step.join(10)
    assert calls == [(1, 2)]


# -- Kurita caps: templates and target pairs are rows, queries are counted before scoring ----------------


@settings(max_examples=100, deadline=None)
@given(st.integers(min_value=0, max_value=10**6), st.integers(min_value=1, max_value=10**5))
def test_a_kurita_run_is_refused_exactly_when_its_queries_exceed_the_cap(queries, cap):
    server = ServerSettings(max_kurita_queries=cap)
    if queries > cap:
        with pytest.raises(LimitError, match=f"make {queries:,} masked queries; this server runs at most {cap:,}"):
            server.check_kurita(queries)
    else:
        server.check_kurita(queries)


def _kurita(monkeypatch, templates: str, pairs: str, attributes: str, **env: str):
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    at = run_app("kurita")
    at.text_area(key="kurita.templates").set_value(templates)
    at.text_area(key="kurita.pairs").set_value(pairs)
    at.text_area(key="kurita.attributes").set_value(attributes)
    next(b for b in at.button if b.label == "Score").click().run()
    no_exceptions(at)
    return at


def test_the_kurita_page_refuses_too_many_queries_before_scoring(app_env, monkeypatch):
    import ui.runs

    monkeypatch.setattr(ui.runs, "heavy_job", lambda what: pytest.fail("scoring started"))  # refused before any work
    # 2 templates x 4 targets x 3 attributes x 2 = 48 queries
    at = _kurita(monkeypatch, "[T] is a [A].\n[T] likes [A].", "he/she\nmen/women", "nurse\nengineer, pilot", BIASLENS_MAX_KURITA_QUERIES="47")
    assert "make 48 masked queries; this server runs at most 47 at once (BIASLENS_MAX_KURITA_QUERIES)" in texts(at.error)


@pytest.mark.parametrize("field,message", [("templates", "The template list has 3 rows"), ("pairs", "The target pair list has 3 rows")])
def test_templates_and_target_pairs_count_as_rows(app_env, monkeypatch, field, message):
    import ui.runs

    monkeypatch.setattr(ui.runs, "heavy_job", lambda what: pytest.fail("scoring started"))
    values = {"templates": "[T] is a [A].", "pairs": "he/she", "attributes": "nurse"}
    values[field] = {"templates": "[T] is a [A].\n[T] likes [A].\n[T] was a [A].", "pairs": "he/she\nmen/women\nboys/girls"}[field]
    at = _kurita(monkeypatch, values["templates"], values["pairs"], values["attributes"], BIASLENS_MAX_UPLOAD_ROWS="2")
    assert message in texts(at.error) and "BIASLENS_MAX_UPLOAD_ROWS" in texts(at.error)
