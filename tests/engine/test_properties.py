"""Property-based tests: arbitrary input gives a result or a clear, typed error."""

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from biaslens.engine.alignment import align_ids
from biaslens.data.datasets import read_pairs_file
from biaslens.errors import BiaslensError, DatasetError, InputError
from biaslens.engine.evaluation import inspect_pair

FAST = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

# Text with everything a user can paste: any Unicode (emoji, combining marks, RTL),
# control characters, whitespace runs, and pieces that look like special tokens.
texts = st.one_of(
    st.text(max_size=60),
    st.text(alphabet=st.characters(codec="utf-8"), max_size=30),
    st.sampled_from(["", "   ", "\x00\x01", "🙂🙂", "[MASK]", "<s>", "[CLS] hi", "a\u0301", "שלום עולם", "word " * 700]),
    st.lists(st.sampled_from(["The", "women", "men", "are", "bad", "drivers", ".", ",", "🙂", "ß"]), max_size=12).map(" ".join),
)


@given(a=st.lists(st.integers(0, 6), max_size=15), b=st.lists(st.integers(0, 6), max_size=15))
def test_alignment_partitions_the_non_special_positions(a, b):
    al = align_ids(a, b)
    assert sorted(al.modified_a + al.unmodified_a) == list(range(len(a)))
    assert sorted(al.modified_b + al.unmodified_b) == list(range(len(b)))
    assert len(al.unmodified_a) == len(al.unmodified_b)
    assert all(a[i] == b[j] for i, j in zip(al.unmodified_a, al.unmodified_b))


@FAST
@given(a=texts, b=texts)
def test_inspect_pair_returns_a_result_or_a_clear_error(tiny_models, a, b):
    lm = tiny_models["roberta"] if len(a) % 2 else tiny_models["bert-cased"]
    try:
        result = inspect_pair(lm, a, b, metrics="aul,aula,cps,sss,all_masked,pll")
    except InputError as exc:
        message = str(exc)
        assert message and "\n" not in message and "Traceback" not in message
        return
    for key in result.metrics:
        for value in result.score(key):
            # Only SSS may be undefined (no modified token), and it is reported as undecidable.
            assert math.isfinite(value) or (key == "sss" and math.isnan(value)), (key, value)
    for side in (result.stereo, result.anti):
        frame = side.token_frame()
        assert np.isfinite(frame["logprob"]).all() and np.isfinite(frame["attention"]).all()


@FAST
@given(raw=st.binary(max_size=300))
def test_any_bytes_as_a_pairs_file_load_or_fail_with_the_file_name(tmp_path, raw):
    for suffix in (".csv", ".jsonl"):
        path = tmp_path / f"upload{suffix}"
        path.write_bytes(raw)
        try:
            dataset = read_pairs_file(path)
        except DatasetError as exc:
            assert "upload" in str(exc)
        else:
            assert len(dataset) >= 1
            assert all(p.sent_stereo.strip() and p.sent_anti.strip() for p in dataset.pairs)


@FAST
@given(text=texts)
def test_encode_never_truncates(tiny_bert, text):
    try:
        enc = tiny_bert.encode(text)
    except BiaslensError:
        return
    assert len(enc) <= tiny_bert.max_length
    assert enc.special[0] and enc.special[-1]


@pytest.mark.parametrize("a, b", [("Women drive.", "Women drive."), ("A", "B " * 600)])
def test_identical_or_overlong_pairs_are_refused(tiny_bert, a, b):
    with pytest.raises(InputError):
        inspect_pair(tiny_bert, a, b)
