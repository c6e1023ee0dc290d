"""The anatomy views (biaslens/anatomy) and the engine's hooks under them (biaslens/engine/internals.py).

The hooks: found in every family; off, the model's output is its own, exactly, in this thread and in another one while
an intervention runs; every layer's state equals transformers' `output_hidden_states`; one head zeroed through the
attention module equals a hand-written BERT and GPT-2 with that head zeroed (tests/engine/anatomy_reference.py); the
growing batch equals one call per head. The views: each reads the score `inspect_pair` gives; integrated gradients add
up to f(x) - f(baseline); the lens's last layer is the model's own log p; AULA's shares average to AULA's weights and
add up to its margin; a dataset's ranking is cached, stoppable and resumable.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest
import torch

from biaslens.anatomy.attribution import attribute, attribute_pair, gauss_legendre
from biaslens.anatomy.focus import focus_sentence
from biaslens.anatomy.heads import ablated_scores, head_effects, rank_heads, zeroed_score
from biaslens.anatomy.lens import logit_lens, logit_lens_pair
from biaslens.data.datasets import Pair
from biaslens.engine.cache import ResultCache
from biaslens.engine.evaluation import inspect_pair
from biaslens.engine.internals import Intervention, intervene
from biaslens.engine.scoring import unmasked_pass
from biaslens.errors import InputError, JobCancelled
from tests.engine import anatomy_reference as ref

A, B = "The nurse said she was tired.", "The nurse said he was tired."
TOL = 1e-5


@pytest.fixture(scope="module")
def every_model(tiny_models, tiny_causal):
    return {**tiny_models, **tiny_causal}


def _ids(lm, text=A):
    return torch.tensor([list(lm.encode(text).ids)])


def test_internals_found_in_every_family(every_model):
    for name, lm in every_model.items():
        found = lm.internals
        assert found.unavailable is None, name
        assert (found.num_layers, found.num_heads) == (lm.num_layers, lm.num_heads), name
        assert found.num_heads * found.head_dim == lm.model.config.hidden_size, name
        assert lm.internals is found  # found once


def test_hooks_off_change_nothing(every_model):
    """Installed but with no intervention in effect, the hooks leave the model's output exactly as it was."""
    for name, lm in every_model.items():
        ids = _ids(lm)
        with torch.inference_mode():
            before = lm.model(input_ids=ids).logits
            lm.internals.install()
            after = lm.model(input_ids=ids).logits
        assert torch.equal(before, after), name


def test_a_hooked_model_can_be_copied_and_its_copy_is_never_intervened_on(tiny_gpt2):
    """The engine copies models (the eager twin for attention weights, bf16-rescore's bfloat16 copy, the packing probe):
    once the anatomy's hooks were installed, `copy.deepcopy` failed on their lock. A copy keeps inert hooks: an
    intervention in effect changes the original's pass, never the copy's."""
    import copy

    lm = tiny_gpt2
    lm.internals.install()
    twin = copy.deepcopy(lm.model)
    ids = _ids(lm)
    zero = Intervention(head_outputs=lambda layer, heads: torch.zeros_like(heads))
    with torch.inference_mode():
        clean = twin(input_ids=ids).logits
        with intervene(lm.internals, zero):
            ablated, copied = lm.model(input_ids=ids).logits, twin(input_ids=ids).logits
    assert torch.equal(copied, clean) and not torch.equal(ablated, clean)


def test_intervention_stays_in_its_thread(tiny_gpt2):
    """While one thread ablates every head, another thread's pass of the same model is untouched."""
    lm = tiny_gpt2
    ids = _ids(lm)
    with torch.inference_mode():
        own = lm.body(ids)
    inside, seen = threading.Event(), {}

    def other():
        inside.wait(10)
        with torch.inference_mode():
            seen["out"] = lm.body(ids)

    def zero_all(layer, z):
        inside.set()
        worker.join(10)  # the other thread's whole pass runs while this intervention is in effect
        return torch.zeros_like(z)

    worker = threading.Thread(target=other)
    worker.start()
    with torch.inference_mode(), intervene(lm.internals, Intervention(head_outputs=zero_all)):
        ablated = lm.body(ids)
    assert torch.equal(seen["out"], own)
    assert not torch.allclose(ablated, own)


def test_layer_states_are_transformers_hidden_states(every_model):
    for name, lm in every_model.items():
        ids = _ids(lm)
        with torch.inference_mode():
            hs = lm.model.base_model(input_ids=ids, output_hidden_states=True).hidden_states
            states = lm.layer_states(ids)
            assert len(states) == lm.num_layers + 1, name
            for k in range(lm.num_layers):
                assert torch.equal(states[k], hs[k]), (name, k)
            assert torch.equal(lm.final_norm(states[-1]), hs[-1]), name  # the final norm applied once
            assert torch.equal(lm.body(inputs_embeds=lm.word_embeddings(ids)), lm.body(ids)), name


@pytest.mark.parametrize("family", ["bert-cased", "gpt2"])
def test_head_ablation_equals_the_hand_written_reference(tiny_models, tiny_causal, family):
    lm = tiny_models.get(family) or tiny_causal[family]
    forward = ref.bert_forward if family == "bert-cased" else ref.gpt2_forward
    ids = _ids(lm)
    states, logits = forward(lm.model, ids[0])
    with torch.inference_mode():
        assert torch.allclose(lm.model(input_ids=ids).logits[0], logits, atol=TOL)  # the reference is the model
        for layer, ours in enumerate(lm.layer_states(ids)):
            assert torch.allclose(ours[0], states[layer], atol=TOL), layer
    for layer in range(lm.num_layers):
        for head in range(lm.num_heads):

            def zero(at, z, layer=layer, head=head):
                return z.index_fill(2, torch.tensor([head]), 0.0) if at == layer else None

            with torch.inference_mode(), intervene(lm.internals, Intervention(head_outputs=zero)):
                ours = lm.model(input_ids=ids).logits[0]
            theirs = forward(lm.model, ids[0], zero=(layer, head))[1]
            assert torch.allclose(ours, theirs, atol=TOL), (layer, head)
            assert not torch.allclose(ours, logits, atol=TOL)  # the head mattered


def test_growing_batch_equals_one_call_per_head(every_model):
    for name, lm in every_model.items():
        s = focus_sentence(lm, A)
        clean, ablated = ablated_scores(lm, s)
        for layer in range(lm.num_layers):
            for head in range(lm.num_heads):
                assert ablated[layer, head] == pytest.approx(zeroed_score(lm, s, [(layer, head)]), abs=TOL), (name, layer, head)
        assert clean == pytest.approx(zeroed_score(lm, s, ()), abs=TOL)


def test_every_view_reads_the_metric_inspect_pair_gives(every_model):
    for name, lm in every_model.items():
        metric = "aul" if lm.kind == "masked" else "ll"
        margin = inspect_pair(lm, A, B, metrics=[metric]).margin(metric)
        attributed = attribute_pair(lm, A, B, n_steps=8)
        assert attributed.stereo.metric == metric
        assert attributed.margin == pytest.approx(margin, abs=TOL), name
        assert logit_lens_pair(lm, A, B).margins[-1] == pytest.approx(margin, abs=TOL), name
        assert head_effects(lm, A, B, aula=False).margin == pytest.approx(margin, abs=TOL), name


def test_causal_first_token_policies(tiny_gpt2):
    """Under bias-bench's policy the first token is read from the start context: a constant for attribution, the start
    context's own layers for the lens; under 'none' it is not scored."""
    for policy in ("start", "none", "bos"):
        lm = tiny_gpt2.with_first_token(policy)
        margin = inspect_pair(lm, A, B, metrics=["ll"]).margin("ll")
        lens = logit_lens_pair(lm, A, B)
        assert lens.margins[-1] == pytest.approx(margin, abs=TOL), policy
        assert attribute_pair(lm, A, B, n_steps=4).margin == pytest.approx(margin, abs=TOL), policy
        read = unmasked_pass(lm, [lm.encode(A)], attention=False)[0]
        assert np.allclose(lens.stereo.logprob[-1], read.logprob[lens.stereo.positions], atol=TOL), policy


def test_lens_last_layer_is_the_models_own_log_p(every_model):
    for name, lm in every_model.items():
        lens = logit_lens(lm, A)
        read = unmasked_pass(lm, [lm.encode(A)], attention=False)[0]
        assert lens.logprob.shape == (lm.num_layers + 1, len(lens.positions))
        assert np.allclose(lens.logprob[-1], read.logprob[lens.positions], atol=TOL), name
        assert not np.allclose(lens.logprob[0], lens.logprob[-1]), name


@pytest.mark.parametrize("family", ["bert-cased", "gpt2"])
def test_lens_equals_the_hand_written_reference(tiny_models, tiny_causal, family):
    lm = tiny_models.get(family) or tiny_causal[family]
    forward = ref.bert_forward if family == "bert-cased" else ref.gpt2_forward
    enc = lm.encode(A)
    states, _ = forward(lm.model, torch.tensor(enc.ids))
    lens = logit_lens(lm, A)
    for layer, state in enumerate(states):
        with torch.no_grad():
            logits = lm.project(lm.final_norm(state))
        want = ref.sentence_score(logits, enc.ids, lens.positions, lm.reads_previous, "mean")
        assert lens.logprob[layer].mean() == pytest.approx(want, abs=TOL), layer


def test_integrated_gradients_add_up(tiny_bert, tiny_gpt2):
    """Completeness: the attributions sum to f(x) - f(0) up to the quadrature's error, which shrinks with more steps."""
    for lm in (tiny_bert, tiny_gpt2):
        fine, coarse = attribute(lm, A, n_steps=64), attribute(lm, A, n_steps=2)
        assert abs(fine.completeness_error) < 1e-4
        assert abs(fine.completeness_error) <= abs(coarse.completeness_error)
        assert fine.integrated_gradients.shape == (len(lm.encode(A)),)
        assert fine.baseline_score != fine.score


def test_attribution_does_not_depend_on_the_batches(tiny_bert):
    one_row = attribute(tiny_bert, A, n_steps=16, batch_tokens=1)
    together = attribute(tiny_bert, A, n_steps=16)
    assert np.allclose(one_row.integrated_gradients, together.integrated_gradients, atol=TOL)
    assert np.allclose(one_row.gradient_x_input, together.gradient_x_input, atol=TOL)


def test_gauss_legendre_is_captums_rule():
    points, weights = gauss_legendre(3)
    assert weights.sum() == pytest.approx(1.0)
    assert points.tolist() == pytest.approx([0.5 - 0.5 * np.sqrt(0.6), 0.5, 0.5 + 0.5 * np.sqrt(0.6)])
    assert weights.tolist() == pytest.approx([5 / 18, 8 / 18, 5 / 18])


def test_pair_difference_is_on_the_shared_tokens(tiny_bert):
    pair = attribute_pair(tiny_bert, A, B, n_steps=8)
    diff = pair.difference()
    assert list(diff["position_stereo"]) == list(pair.alignment.unmodified_a) and len(diff) == len(pair.stereo.tokens) - 3  # not [CLS], [SEP], she
    assert list(diff["token"]) == [pair.stereo.tokens[i] for i in pair.alignment.unmodified_a]
    assert np.allclose(diff["difference"], diff["stereo"] - diff["anti"])
    frame = pair.frame()
    assert list(frame.columns) == ["sentence", "position", "token", "text", "method", "value"]
    assert set(frame["sentence"]) == {"stereo", "anti", "difference"}
    assert len(pair.completeness()) == 2


def test_tokens_are_drawn_as_the_text_they_cover(tiny_gpt2):
    """A byte-level BPE's tokens ("ĠcafÃ©") are shown as the text they cover ("café") in every drawing and in the files'
    text column, as the inspector shows them; the token column keeps the tokenizer's own."""
    from biaslens.figures.anatomy import attribution_chart, attribution_strips_html, lens_heatmap

    stereo, anti = "The café nurse said she was tired.", "The café nurse said he was tired."
    pair = attribute_pair(tiny_gpt2, stereo, anti, n_steps=4)
    lens = logit_lens_pair(tiny_gpt2, stereo, anti)
    assert "Ã" in "".join(pair.stereo.tokens)  # the tokenizer's bytes of "é"
    assert "é" in pair.stereo.texts and "Ã" not in "".join(pair.stereo.texts) + "".join(lens.stereo.texts)
    assert pair.stereo.texts == tuple(tiny_gpt2.token_texts([tiny_gpt2.encode(stereo)])[0])
    strips = attribution_strips_html(pair)
    assert ">é<" in strips and "Ã" not in strips
    for chart in (attribution_chart(pair, "t"), lens_heatmap(lens.stereo, "t")):
        assert "Ã" not in chart.to_json()
    assert "Ã" in "".join(pair.frame()["token"]) and "Ã" not in "".join(pair.frame()["text"])
    assert "Ã" not in "".join(lens.frame()["text"])


def test_aula_shares_split_aulas_weights(every_model):
    for name, lm in every_model.items():
        effects = head_effects(lm, A, B)
        aula = effects.aula_metric
        assert aula == ("aula" if lm.kind == "masked" else "aula_c")
        inspection = inspect_pair(lm, A, B, metrics=[aula])
        assert effects.aula_margin == pytest.approx(inspection.margin(aula), abs=TOL), name
        assert effects.aula_share.sum() == pytest.approx(effects.aula_margin, abs=TOL), name
        reads = unmasked_pass(lm, [lm.encode(A), lm.encode(B)], attention=True)
        for shares, read in zip(effects.token_shares, reads):
            assert np.allclose(shares.mean(axis=(0, 1)), read.attention, atol=TOL), name
        frame = effects.frame()
        assert list(frame.columns) == ["layer", "head", "margin_change", "aula_share"]
        assert len(frame) == lm.num_layers * lm.num_heads


def test_refusals(tiny_bert, tiny_gpt2):
    with pytest.raises(InputError, match="AUL"):
        attribute(tiny_bert, A, metric="ll")
    with pytest.raises(InputError, match="LL"):
        logit_lens(tiny_gpt2, A, metric="aul")
    with pytest.raises(InputError, match="n_steps"):
        attribute(tiny_bert, A, n_steps=0)
    with pytest.raises(InputError):
        head_effects(tiny_bert, A, A)


def test_rank_heads_is_cached_stoppable_and_resumable(tiny_bert, tmp_path):
    pairs = [
        Pair(k, "custom", "gender", "stereo", a, b)
        for k, (a, b) in enumerate([(A, B), ("She is a nurse.", "He is a nurse."), ("Women cry.", "Men cry.")])
    ]
    cache = ResultCache(tmp_path / "cache.sqlite")
    asked = []

    def stop():
        asked.append(1)
        return len(asked) > 1  # the first chunk runs, then the run is stopped

    with pytest.raises(JobCancelled):
        rank_heads(tiny_bert, pairs, cache=cache, stop=stop, chunk_pairs=1)
    seen = []
    ranking = rank_heads(tiny_bert, pairs, cache=cache, progress=lambda done, total: seen.append((done, total)))
    assert ranking.cached >= 1  # resumed: the first chunk came from the cache
    assert seen[-1] == (3, 3)
    for k, pair in enumerate(pairs):
        effects = head_effects(tiny_bert, pair.sent_stereo, pair.sent_anti, aula=False)
        assert np.allclose(ranking.changes[k], effects.margin_change, atol=TOL)
        assert ranking.margins[k] == pytest.approx(effects.margin, abs=TOL)
    frame = ranking.frame(n_resamples=200)
    assert len(frame) == tiny_bert.num_layers * tiny_bert.num_heads
    moved = np.abs(frame["bias_score_change"].to_numpy())
    assert (np.diff(moved) <= 1e-12).all()  # the heads that move the bias score most first
    assert (frame["mean_ci_low"] <= frame["mean_margin_change"] + 1e-12).all()
    assert (frame["mean_margin_change"] <= frame["mean_ci_high"] + 1e-12).all()
    again = rank_heads(tiny_bert, pairs, cache=cache, cache_only=True)
    assert np.array_equal(again.changes, ranking.changes)


def test_zeroed_score_zeroes_the_heads_named(tiny_gpt2):
    s = focus_sentence(tiny_gpt2, A)
    clean, ablated = ablated_scores(tiny_gpt2, s)
    assert zeroed_score(tiny_gpt2, s, ()) == pytest.approx(clean, abs=TOL)
    assert zeroed_score(tiny_gpt2, s, [(1, 0)]) == pytest.approx(ablated[1, 0], abs=TOL)
    both = zeroed_score(tiny_gpt2, s, [(0, 1), (1, 0)])
    assert both != pytest.approx(ablated[1, 0], abs=TOL) and both != pytest.approx(ablated[0, 1], abs=TOL)
    with pytest.raises(InputError, match="No head 9"):
        zeroed_score(tiny_gpt2, s, [(0, 9)])


@pytest.mark.slow
def test_planted_anatomy_on_a_quick_lab_model(tmp_path):
    """biaslens.lab.anatomy on a lab model trained in seconds: every measure is there and in range (the seeds' result is
    benchmarks/lab_anatomy.py's, recorded in docs/lab.md)."""
    import dataclasses

    from biaslens.engine.models import load_model
    from biaslens.lab.anatomy import planted_anatomy
    from biaslens.lab.settings import scenario_settings
    from biaslens.lab.store import train_lab_model

    settings = dataclasses.replace(scenario_settings("association"), corpus_size=600, steps=12, batch_size=32)
    found = planted_anatomy(load_model(str(train_lab_model(settings, cache_dir=tmp_path).path)), settings, k=1, n_steps=4)
    assert found.pairs == 48 and len(found.random_k_margins) == 8  # a lab model's 2 layers x 4 heads, one at a time
    assert 0 < found.planted_token_share < 1 and 0 <= found.planted_share <= 1 and 0 <= found.attribute_top <= 1
    assert found.top_k_margin in found.random_k_margins  # the top head is one of the sets
    assert 0 <= found.beaten <= 1
