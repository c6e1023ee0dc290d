"""Verified model families: a tiny random model of each real architecture, loaded through `load_model`.

DistilBERT, the ELECTRA generator and multilingual BERT use the real WordPiece vocabularies in
../shared; XLM-RoBERTa and DeBERTa-v3 a SentencePiece Unigram model and ModernBERT a byte-level
BPE, each trained in the test from `biaslens.engine.testing.CORPUS`. For each: every metric equals the
naive one-sentence reference (tests/reference.py), batching and padding change nothing, attention
weights come from eager attention. Then: AULA switched off, with its reason, for an architecture
without attention weights (FNet), and the alignment of modified and unmodified tokens on
hand-made SentencePiece, Japanese and Cyrillic examples.
"""

import json

import numpy as np
import pytest
import torch

from biaslens.engine.alignment import align_pair
from biaslens.errors import MetricUnavailableError
from biaslens.engine.evaluation import evaluate, inspect_pair
from biaslens.engine.pairs import available_metrics, score_encoded_pairs
from biaslens.engine.metrics import MASKED_METRICS, PAPER_METRICS
from biaslens.engine.models import PRESETS, VERIFIED_ARCHITECTURES, load_model, word_ids_of
from biaslens.engine.scoring import unmasked_pass
from biaslens.engine.testing import TOKENIZER_FOLDERS, TRAINED_FAMILIES, build_random_model, train_tokenizer
from tests.engine import reference
from tests.support import FAMILY_PAIRS, REPO, TOKENIZERS
from tests.support.fnet import build_fnet

#: family -> (model_type, the class the tiny model must be)
FAMILIES = {
    "distilbert": ("distilbert", "DistilBertForMaskedLM"),
    "electra": ("electra", "ElectraForMaskedLM"),
    "mbert": ("bert", "BertForMaskedLM"),
    "xlm-roberta": ("xlm-roberta", "XLMRobertaForMaskedLM"),
    "deberta-v3": ("deberta-v2", "DebertaV2ForMaskedLM"),
    "modernbert": ("modernbert", "ModernBertForMaskedLM"),
}
PAIRS = [
    *FAMILY_PAIRS,
    ("Она медсестра, и она очень устала после ночной смены.", "Он медбрат, и он очень устал после ночной смены."),
    ("彼女は看護師で、夜勤の後はとても疲れていた。", "彼は看護師で、夜勤の後はとても疲れていた。"),
]
#: Short pairs for the naive reference (one forward pass per masked token): English, Russian, Japanese.
REFERENCE_PAIRS = [
    ("The nurse said she was tired.", "The doctor said he was tired."),
    ("Она врач и работает в больнице.", "Он врач и работает в больнице."),
    ("彼女は医者です。", "彼は医者です。"),
]
#: The metrics kaneko2022 mode changes (AUL's positions, CPS's rounding, SSS's cross-mean).
COMPAT_METRICS = ["aul", "aula", "cps", "sss"]
TOL = 1e-5


@pytest.fixture(scope="module")
def family_dirs(tmp_path_factory):
    root = tmp_path_factory.mktemp("families")
    return {}, root


@pytest.fixture(params=list(FAMILIES))
def family(request):
    return request.param


@pytest.fixture
def family_lm(family, family_dirs, tokenizer_dirs):
    """The family's tiny model, built once per module.

    WordPiece families use the real vocabularies in ../shared/tokenizers; without them DistilBERT and ELECTRA
    (uncased English) use the suite's tiny WordPiece vocabulary, and multilingual BERT is skipped.
    """
    from tests.support.tiny_tokenizers import vocab_size

    built, root = family_dirs
    if family not in built:
        folder = TOKENIZER_FOLDERS[family]
        tokenizer_dir, size = (TOKENIZERS / folder if folder else None), None
        if folder is not None and not tokenizer_dir.is_dir():
            if family == "mbert":
                pytest.skip("../shared/tokenizers is not available (the real multilingual vocabulary)")
            tokenizer_dir = tokenizer_dirs["bert-cased"]
            size = vocab_size("bert-cased", tokenizer_dir)
        path = build_random_model(family, tokenizer_dir, root / family, **({"vocab_size": size} if size else {}))
        built[family] = (path, load_model(str(path)))
    return built[family][1]


def test_the_family_loads_as_its_real_architecture(family, family_lm):
    lm = family_lm
    model_type, cls = FAMILIES[family]
    assert lm.model_type == model_type and type(lm.model).__name__ == cls
    assert model_type in VERIFIED_ARCHITECTURES
    assert lm.project is not None  # the MLM head is split off and verified against the full model
    assert lm.attention_unavailable is None and lm.padding_invariant
    for text in ("The nurse said she was tired.", "Она врач.", "彼女は医者です。"):
        enc = lm.encode(text)
        assert enc.special[0] and enc.special[-1] and not any(enc.special[1:-1])
        assert lm.tokenizer.unk_token_id not in enc.ids[1:-1] or family in ("distilbert", "electra")  # uncased WordPiece lacks kana


def test_attention_weights_come_from_eager_attention(family_lm):
    lm = family_lm
    eager = lm._eager_model()
    assert eager.config._attn_implementation == "eager"
    assert eager.get_input_embeddings().weight.data_ptr() == lm.model.get_input_embeddings().weight.data_ptr()
    enc = lm.encode(PAIRS[0][0])
    (res,) = unmasked_pass(lm, [enc], attention_matrices=True)
    assert res.attention_matrices.shape == (lm.num_layers, lm.num_heads, len(enc), len(enc))
    np.testing.assert_allclose(res.attention_matrices.sum(-1), 1.0, atol=1e-5)
    np.testing.assert_allclose(res.attention_matrices.mean(axis=(0, 1)).mean(0), res.attention, atol=1e-6)


@pytest.mark.parametrize("compat", [False, True])
def test_every_metric_matches_the_naive_reference(family_lm, compat):
    lm = family_lm
    metrics = COMPAT_METRICS if compat else list(MASKED_METRICS)
    reference.assert_engine_matches(lm, REFERENCE_PAIRS, metrics, compat)


def test_batched_equals_one_at_a_time_and_padding_changes_nothing(family_lm):
    lm = family_lm
    encs = [lm.encode(s) for pair in PAIRS for s in pair]
    assert len({len(e) for e in encs}) > 2  # different lengths: the batches are padded
    reference.assert_batching_changes_nothing(lm, encs, step=5, batch_tokens=100_000, masked_batch_tokens=100_000)


def test_a_dataset_run_with_the_default_metrics(family_lm):
    from biaslens.data.datasets import Pair

    pairs = [Pair(i, "custom", "gender", "stereo", a, b) for i, (a, b) in enumerate(PAIRS)]
    result = evaluate(family_lm, pairs, cache=None, chunk_pairs=2)
    assert set(result.summary["metrics"]) == set(PAPER_METRICS)
    assert not any("left out" in w for w in result.warnings)
    for key in PAPER_METRICS:
        assert result.pairs[f"{key}_stereo"].notna().all(), key


def test_presets_name_a_model_of_every_verified_family(capsys):
    assert {
        "distilbert-base-uncased",
        "google/electra-base-generator",
        "xlm-roberta-base",
        "answerdotai/ModernBERT-base",
        "bert-base-multilingual-cased",
        "microsoft/deberta-v2-xlarge",
    } <= set(PRESETS)
    from biaslens.cli import main

    assert main(["models"]) == 0
    listed = capsys.readouterr().out
    assert "answerdotai/ModernBERT-base" in listed and "  modernbert " in listed and "  deberta-v2 " in listed
    page = (REPO / "docs" / "models.md").read_text(encoding="utf-8")
    table = page[page.index("## Verified model families") :]
    for name in ("DistilBERT", "ELECTRA", "DeBERTa", "XLM-RoBERTa", "ModernBERT", "multilingual BERT", "FNet"):
        assert name in table, name


# ---------------------------------------------------------------------------------------
# DeBERTa: the head its own checkpoints hold
# ---------------------------------------------------------------------------------------


def test_a_deberta_checkpoint_without_the_legacy_flag_loads_its_own_head(tmp_path):
    """DeBERTa's checkpoints name the MLM head lm_predictions.* and their configs do not say legacy=False."""
    folder = build_random_model("deberta-v3", None, tmp_path / "deberta")
    expected = load_model(str(folder))
    config = json.loads((folder / "config.json").read_text())
    assert config.pop("legacy") is False
    (folder / "config.json").write_text(json.dumps(config))
    lm = load_model(str(folder))  # transformers' default (legacy) head would be random: refused before this fix
    assert lm.model.legacy is False and lm.project is not None
    ids = torch.tensor([lm.encode("Она врач.").ids])
    with torch.inference_mode():
        torch.testing.assert_close(lm.model(ids).logits, expected.model(ids).logits)
    # A checkpoint saved by transformers with its default (legacy, cls.*) head loads as it is.
    legacy = load_model(str(build_random_model("deberta-v3", None, tmp_path / "legacy", legacy=True)))
    assert legacy.model.legacy is True and legacy.project is not None


# ---------------------------------------------------------------------------------------
# An architecture without attention weights: AULA off, with the reason
# ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def fnet(tmp_path_factory):
    folder = build_fnet(tmp_path_factory.mktemp("fnet") / "fnet")
    return folder, load_model(str(folder))


def test_an_architecture_without_attention_weights_gets_aula_off_with_the_reason(fnet):
    _, lm = fnet
    assert "no attention weights" in lm.attention_unavailable and "AULA" in lm.attention_unavailable
    assert "\n" not in lm.attention_unavailable
    kept, skipped = available_metrics(lm)
    assert "aula" not in kept and set(skipped) == {"aula"}
    with pytest.raises(MetricUnavailableError, match="AULA cannot be computed for this model: .*no attention weights"):
        inspect_pair(lm, *PAIRS[0], metrics="aul,aula")
    result = inspect_pair(lm, *PAIRS[0], attention_matrices=True)  # the default metrics: AULA left out, named in the notes
    assert result.metrics == [k for k in PAPER_METRICS if k != "aula"]
    assert result.notes and "AULA left out" in result.notes[0]
    assert result.attention_matrices is None
    frame = result.stereo.token_frame()
    assert frame["attention"].isna().all() and frame["logprob"].notna().all()


def test_a_model_that_ignores_the_attention_mask_is_batched_without_padding(fnet):
    _, lm = fnet
    assert not lm.padding_invariant
    encoded = [(lm.encode(a), lm.encode(b)) for a, b in PAIRS]
    scored = score_encoded_pairs(lm, encoded, ["aul", "cps", "sss", "all_masked"], batch_tokens=100_000)
    for (a, b), result in zip(PAIRS, scored):
        for metric in ("aul", "cps", "sss", "all_masked"):
            ref_a, ref_b, _, _ = reference.pair_scores(lm, a, b, metric)
            got_a, got_b = result.scores[metric]
            assert (got_a.value, got_b.value) == pytest.approx((ref_a, ref_b), rel=1e-6, abs=TOL), metric


def test_the_cli_leaves_aula_out_by_default_and_refuses_it_by_name(fnet, tmp_path, capsys):
    from biaslens.cli import main

    folder, _ = fnet
    data = tmp_path / "pairs.csv"
    rows = [",sent_more,sent_less,stereo_antistereo,bias_type"] + [f'{i},"{a}","{b}",stereo,gender' for i, (a, b) in enumerate(PAIRS)]
    data.write_text("\n".join(rows) + "\n", encoding="utf-8")
    out = tmp_path / "out"
    assert main(["evaluate", "--model", str(folder), "--dataset", str(data), "--no-cache", "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert "note: AULA left out" in err and "no attention weights" in err
    assert set(json.loads((out / "summary.json").read_text())["metrics"]) == {"aul", "cps", "sss", "all_masked"}
    assert main(["evaluate", "--model", str(folder), "--dataset", str(data), "--metrics", "aul,aula", "--no-cache", "--out", str(out)]) == 2
    last = capsys.readouterr().err.strip().splitlines()[-1]  # after the loading line and the progress bar
    assert last.startswith("biaslens evaluate: error: AULA cannot be computed for this model: ") and "no attention weights" in last
    assert main(["inspect", "--model", str(folder), PAIRS[0][0], PAIRS[0][1]]) == 0
    captured = capsys.readouterr()
    assert "note: AULA left out" in captured.err and "AUL" in captured.out


# ---------------------------------------------------------------------------------------
# Alignment on hand-made examples: SentencePiece word markers, Japanese, Cyrillic
# ---------------------------------------------------------------------------------------

#: A hand-made Unigram vocabulary (scores chosen so the segmentation below is the only best one), read by the
#: real XLM-R tokenizer class: "▁" marks the start of a word; Japanese has no spaces, so a sentence is one word.
HAND_PIECES = {
    "▁": -5.0,
    "▁Он": -3.0,
    "а": -3.0,
    "▁устал": -3.0,
    ".": -2.0,
    ",": -2.0,
    "Анна": -4.0,
    "Иван": -4.0,
    "▁врач": -3.0,
    "▁а": -3.0,
    "▁он": -3.0,
    "▁нет": -3.0,
    "彼": -3.0,
    "女": -3.0,
    "彼女": -3.0,
    "は": -3.0,
    "彼は": -2.5,
    "医者": -3.0,
    "です": -3.0,
    "。": -2.0,
}


@pytest.fixture(scope="module")
def hand_tokenizer():
    from transformers import XLMRobertaTokenizer

    chars = sorted({c for piece in HAND_PIECES for c in piece if c != "▁"} - set(HAND_PIECES))
    vocab = [("<s>", 0.0), ("<pad>", 0.0), ("</s>", 0.0), ("<unk>", 0.0), *HAND_PIECES.items(), *((c, -10.0) for c in chars), ("<mask>", 0.0)]
    return XLMRobertaTokenizer(vocab=vocab)


class _Enc:
    def __init__(self, tokenizer, text):
        enc = tokenizer(text, return_special_tokens_mask=True)
        self.ids = tuple(enc["input_ids"])
        self.special = tuple(bool(s) for s in enc["special_tokens_mask"])
        self.tokens = tuple(tokenizer.convert_ids_to_tokens(list(self.ids)))


def _aligned(tokenizer, a, b):
    ea, eb = _Enc(tokenizer, a), _Enc(tokenizer, b)
    al = align_pair(ea, eb)
    pick = lambda enc, positions: [enc.tokens[i] for i in positions]  # noqa: E731
    return ea, eb, al, pick


def test_cyrillic_endings_are_the_modified_pieces(hand_tokenizer):
    ea, eb, al, pick = _aligned(hand_tokenizer, "Он устал.", "Она устала.")
    assert ea.tokens == ("<s>", "▁Он", "▁устал", ".", "</s>")
    assert eb.tokens == ("<s>", "▁Он", "а", "▁устал", "а", ".", "</s>")
    # Only the feminine endings differ: the stems (with their word markers) are shared and aligned.
    assert al.modified_a == () and al.modified_b == (2, 4)
    assert (al.unmodified_a, al.unmodified_b) == ((1, 2, 3), (1, 3, 5))
    assert pick(ea, al.unmodified_a) == pick(eb, al.unmodified_b) == ["▁Он", "▁устал", "."]


def test_a_word_marker_piece_is_not_the_same_token_as_the_bare_piece(hand_tokenizer):
    # "а" the ending and "▁а" the word ("but") are different ids: the ending is never aligned with the word.
    ea, eb, al, pick = _aligned(hand_tokenizer, "Он устал, а он нет.", "Она устала, а он нет.")
    assert hand_tokenizer.convert_tokens_to_ids("▁а") != hand_tokenizer.convert_tokens_to_ids("а")
    assert pick(eb, al.modified_b) == ["а", "а"] and al.modified_b == (2, 4)
    assert pick(ea, al.unmodified_a) == ["▁Он", "▁устал", ",", "▁а", "▁он", "▁нет", "."]


def test_a_lone_word_marker_is_a_shared_unmodified_token(hand_tokenizer):
    # A word the vocabulary lacks with its marker starts with a lone "▁" piece: shared, aligned, never modified.
    ea, eb, al, pick = _aligned(hand_tokenizer, "Анна врач.", "Иван врач.")
    assert ea.tokens == ("<s>", "▁", "Анна", "▁врач", ".", "</s>") and eb.tokens == ("<s>", "▁", "Иван", "▁врач", ".", "</s>")
    assert al.modified_a == al.modified_b == (2,)
    assert (al.unmodified_a, al.unmodified_b) == ((1, 3, 4), (1, 3, 4))


def test_japanese_without_spaces_modified_pieces_follow_the_segmentation(hand_tokenizer):
    ea, eb, al, pick = _aligned(hand_tokenizer, "彼女は医者です。", "彼は医者です。")
    assert ea.tokens == ("<s>", "▁", "彼女", "は", "医者", "です", "。", "</s>")
    # "彼は" is one piece, so the particle は is modified on the stereotypical side too: the tokens differ there.
    assert eb.tokens == ("<s>", "▁", "彼は", "医者", "です", "。", "</s>")
    assert pick(ea, al.modified_a) == ["彼女", "は"] and pick(eb, al.modified_b) == ["彼は"]
    assert pick(ea, al.unmodified_a) == pick(eb, al.unmodified_b) == ["▁", "医者", "です", "。"]
    assert (al.unmodified_a, al.unmodified_b) == ((1, 4, 5, 6), (1, 3, 4, 5))


def test_word_ids_from_sentencepiece_markers():
    class NoWordIds:  # a slow tokenizer's encoding: words are read from the pieces' markers
        def word_ids(self):
            raise ValueError("slow tokenizer")

    tokens = ["<s>", "▁Он", "а", "▁устал", "а", ".", "</s>"]
    special = [True, False, False, False, False, False, True]
    assert word_ids_of(NoWordIds(), tokens, special) == (-1, 0, 0, 1, 1, 1, -1)
    tokens = ["<s>", "▁", "彼女", "は", "医者", "。", "</s>"]  # no spaces: one word
    assert word_ids_of(NoWordIds(), tokens, [True] + [False] * 5 + [True]) == (-1, 0, 0, 0, 0, 0, -1)


def test_trained_sentencepiece_tokenizers_keep_the_hub_layout():
    xlmr, deberta = train_tokenizer("xlm-roberta"), train_tokenizer("deberta-v3")
    # XLM-R: fairseq order <s>=0, <pad>=1, </s>=2, <unk>=3, <mask> last; DeBERTa-v3: [PAD]=0, [CLS]=1, [SEP]=2, [UNK]=3.
    assert [xlmr.cls_token_id, xlmr.pad_token_id, xlmr.sep_token_id, xlmr.unk_token_id] == [0, 1, 2, 3]
    assert xlmr.mask_token_id == len(xlmr) - 1
    assert [deberta.pad_token_id, deberta.cls_token_id, deberta.sep_token_id, deberta.unk_token_id] == [0, 1, 2, 3]
    assert deberta.mask_token == "[MASK]"
    for tok in (xlmr, deberta):
        pieces = tok.convert_ids_to_tokens(tok("Она врач и работает в больнице.")["input_ids"])
        assert pieces[1].startswith("▁") and tok.unk_token not in pieces
        assert "".join(pieces[1:-1]).replace("▁", " ").strip() == "Она врач и работает в больнице."
    assert set(TRAINED_FAMILIES) == {"xlm-roberta", "deberta-v3", "modernbert"}


def test_mbert_cyrillic_and_japanese_alignment_with_the_real_vocabulary():
    from biaslens.engine.testing import build_tokenizer

    if not (TOKENIZERS / "bert-base-multilingual-cased").is_dir():
        pytest.skip("../shared/tokenizers is not available")
    tok = build_tokenizer("mbert", TOKENIZERS / "bert-base-multilingual-cased")
    ea, eb, al, pick = _aligned(tok, "Она устала.", "Он устал.")
    assert ea.tokens == ("[CLS]", "Она", "у", "##ста", "##ла", ".", "[SEP]")
    assert eb.tokens == ("[CLS]", "Он", "у", "##ста", "##л", ".", "[SEP]")
    assert pick(ea, al.modified_a) == ["Она", "##ла"] and pick(eb, al.modified_b) == ["Он", "##л"]
    # Kanji are split one per token (BERT's CJK rule); kana runs are WordPiece words. 彼女 -> 彼 女: only 女 differs,
    # and the other sentence has no modified token at all (as CrowS-Pairs 129, 231, 1101 with bert-base-cased).
    ea, eb, al, pick = _aligned(tok, "彼女は看護師です。", "彼は看護師です。")
    assert ea.tokens == ("[CLS]", "彼", "女", "は", "看", "護", "師", "で", "##す", "。", "[SEP]")
    assert pick(ea, al.modified_a) == ["女"] and al.modified_b == ()
    assert len(al.unmodified_a) == len(al.unmodified_b) == 8


def test_the_electra_discriminator_is_refused_the_generator_is_the_masked_lm(tmp_path):
    from transformers import ElectraForPreTraining

    from biaslens.errors import NotMaskedLMError
    from biaslens.engine.testing import build_config, build_tokenizer

    if not (TOKENIZERS / "bert-base-uncased").is_dir():
        pytest.skip("../shared/tokenizers is not available")
    folder = tmp_path / "discriminator"
    ElectraForPreTraining(build_config("electra")).save_pretrained(folder)
    build_tokenizer("electra", TOKENIZERS / "bert-base-uncased").save_pretrained(folder)
    with pytest.raises(NotMaskedLMError, match="no trained masked-LM head"):
        load_model(str(folder))
