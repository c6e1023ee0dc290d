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
#: Kaneko & Bollegala (2022) evaluate; the last four are causal models; any other hub id or local folder works too.
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
    # Causal (decoder) language models: scored left to right (docs/metrics.md, "Causal models").
    "gpt2": "GPT-2 small, causal (124M)",
    "EleutherAI/pythia-160m": "Pythia 160M, causal (GPT-NeoX)",
    "EleutherAI/pythia-1.4b": "Pythia 1.4B, causal (GPT-NeoX)",
    "TinyLlama/TinyLlama_v1.1": "TinyLlama 1.1B, causal (Llama architecture, Llama 2 tokenizer)",
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
    "gpt2": "GPT-2, causal (byte-level BPE; the real GPT-2 vocabulary, and one trained in the test)",
    "gpt_neox": "GPT-NeoX / Pythia, causal (the real gpt-neox-20b tokenizer, and a byte-level BPE trained in the test)",
    "llama": "Llama, causal (SentencePiece-style BPE with byte fallback trained in the test; <s> first; grouped-query attention)",
    "qwen2": "Qwen2, causal (byte-level BPE trained in the test; no BOS token, <|endoftext|> before each sentence)",
}

__all__ = ["DEFAULT_MODEL", "PRESETS", "VERIFIED_ARCHITECTURES"]
