"""The models biaslens offers by name, and the architectures it is verified on.

Plain data, without torch, so that `biaslens models` and `biaslens --help` answer at once;
`biaslens.engine.models` (loading) re-exports every name.
"""

from __future__ import annotations

DEFAULT_MODEL = "bert-base-cased"
#: auto: cuda, then mps, then cpu.
DEFAULT_DEVICE = "auto"
#: Half precision (bfloat16, float16) needs a GPU.
DEFAULT_DTYPE = "float32"

#: Models offered by name in the CLI and the app. The first three are the ones
#: Kaneko & Bollegala (2022) evaluate; any other hub id or local folder works too.
PRESETS: dict[str, str] = {
    "bert-base-cased": "BERT base, cased (Kaneko & Bollegala 2022)",
    "roberta-large": "RoBERTa large (Kaneko & Bollegala 2022)",
    "albert-large-v2": "ALBERT large v2 (Kaneko & Bollegala 2022)",
    "bert-base-uncased": "BERT base, uncased (Kurita et al. 2019)",
    "roberta-base": "RoBERTa base",
    "albert-base-v2": "ALBERT base v2",
    "distilbert-base-uncased": "DistilBERT base, uncased",
    "google/electra-base-generator": "ELECTRA base generator (the masked LM half of ELECTRA)",
    "microsoft/deberta-v2-xlarge": "DeBERTa-v2 xlarge (pre-trained as a masked LM)",
    "xlm-roberta-base": "XLM-RoBERTa base (multilingual)",
    "answerdotai/ModernBERT-base": "ModernBERT base",
    "bert-base-multilingual-cased": "multilingual BERT base, cased",
}

#: Architecture (config.model_type) -> how its support was verified: a tiny random-weight model of
#: the real architecture with a tokenizer of the right kind, loaded through `load_model`, every
#: metric equal to a naive one-sentence implementation, batched equal to one at a time
#: (tests/test_model_families.py). docs/models.md's table says the same.
VERIFIED_ARCHITECTURES: dict[str, str] = {
    "bert": "BERT and multilingual BERT (WordPiece; the real bert-base-cased and bert-base-multilingual-cased vocabularies)",
    "roberta": "RoBERTa (byte-level BPE; the real roberta-base vocabulary)",
    "albert": "ALBERT (SentencePiece; the real albert-large-v2 tokenizer)",
    "distilbert": "DistilBERT (WordPiece; the real bert-base-uncased vocabulary)",
    "electra": "ELECTRA generator (WordPiece; the real bert-base-uncased vocabulary)",
    "deberta-v2": "DeBERTa-v2/v3 (SentencePiece Unigram trained in the test)",
    "xlm-roberta": "XLM-RoBERTa (SentencePiece Unigram trained in the test)",
    "modernbert": "ModernBERT (byte-level BPE trained in the test)",
}

__all__ = ["DEFAULT_MODEL", "PRESETS", "VERIFIED_ARCHITECTURES"]
