"""The papers' published numbers, shown as a reference column beside a user's own results.

Kaneko & Bollegala (2022), Tables 1, 3, 4 and 5 (bert-base-cased, roberta-large,
albert-large-v2); Kurita et al. (2019), Tables 3 and 5 (bert-base-uncased). Values are
as printed in the papers (percentages, effect sizes).
"""

from __future__ import annotations

KANEKO_MODELS = {"bert-base-cased": "BERT", "roberta-large": "RoBERTa", "albert-large-v2": "ALBERT"}

#: Table 1: token prediction accuracy (%).
TOKEN_ACCURACY = {
    "bert-base-cased": {"cps": 62.98, "aul_cp": 82.76, "sss": 2.20, "aul_ss": 92.16},
    "roberta-large": {"cps": 68.11, "aul_cp": 99.54, "sss": 3.17, "aul_ss": 98.88},
    "albert-large-v2": {"cps": 56.20, "aul_cp": 88.01, "sss": 2.21, "aul_ss": 81.19},
}

#: Table 3: bias scores of the advantaged (antistereo) and disadvantaged (stereo) CP groups.
GROUP_SCORES = {
    "bert-base-cased": {"all_masked": (54.13, 47.36, 6.77), "aul": (49.54, 53.49, 3.95), "aula": (50.46, 54.65, 4.19)},
    "roberta-large": {"all_masked": (65.14, 37.05, 28.09), "aul": (51.38, 64.26, 12.88), "aula": (51.83, 60.78, 8.95)},
    "albert-large-v2": {"all_masked": (55.05, 45.35, 9.70), "aul": (55.05, 52.95, 2.10), "aula": (54.13, 52.87, 1.26)},
}  # metric -> (adv, dis, |adv - dis|)

#: Table 4: AUL token accuracy (%) on shuffled CP / SS and on SS's unrelated sentences.
SHUFFLE_ACCURACY = {
    "bert-base-cased": {"cp_shuffled": 69.63, "ss_shuffled": 62.30, "ss_unrelated": 71.67},
    "roberta-large": {"cp_shuffled": 80.82, "ss_shuffled": 76.49, "ss_unrelated": 93.88},
    "albert-large-v2": {"cp_shuffled": 80.86, "ss_shuffled": 73.18, "ss_unrelated": 76.08},
}

#: Table 5: bias scores, per dataset ("crows-pairs" / "stereoset") and metric.
BIAS_SCORES = {
    "bert-base-cased": {
        "crows-pairs": {"cps": 58.62, "aul": 52.92, "aula": 54.05},
        "stereoset": {"sss": 57.26, "aul": 50.28, "aula": 51.38},
    },
    "roberta-large": {
        "crows-pairs": {"cps": 65.45, "aul": 62.40, "aula": 59.48},
        "stereoset": {"sss": 61.97, "aul": 59.07, "aula": 55.98},
    },
    "albert-large-v2": {
        "crows-pairs": {"cps": 60.41, "aul": 53.25, "aula": 53.05},
        "stereoset": {"sss": 58.88, "aul": 58.07, "aula": 58.31},
    },
}

#: Kurita et al. (2019) Table 3, bert-base-uncased: effect sizes (* = p < 0.01).
KURITA_WEAT = {
    "insects_flowers": {"label": "Pleasant/Unpleasant (Insects/Flowers)", "glove": 1.543, "bert_weat": 0.6688, "log_prob": 0.8744},
    "ea_aa": {"label": "Pleasant/Unpleasant (EA/AA)", "glove": 1.012, "bert_weat": 1.003, "log_prob": 0.8864},
    "career_family": {"label": "Career/Family (Male/Female)", "glove": 1.814, "bert_weat": 0.5047, "log_prob": 1.126},
    "math_arts": {"label": "Math/Arts (Male/Female)", "glove": 1.061, "bert_weat": 0.6755, "log_prob": 0.8495},
    "science_arts": {"label": "Science/Arts (Male/Female)", "glove": 1.246, "bert_weat": 0.8815, "log_prob": 0.9572},
}

#: Kurita et al. (2019) Table 5: share (%) of attributes more associated with "he" than "she".
KURITA_ATTRIBUTE_SHARES = {"salary job titles": 88.5, "positive traits": 80.0, "negative traits": 78.9, "skills": 84.0}

#: The sizes of the lists behind Kurita et al.'s Table 5 (None: the paper does not state it). Traits: 234 positive and
#: 292 negative words; skills: O*NET 23.2's 17,649 technology skills.
KURITA_LIST_SIZES: dict[str, int | None] = {"salary job titles": None, "positive traits": 234, "negative traits": 292, "skills": 17649}


def published_bias_score(model: str, dataset: str, metric: str) -> float | None:
    """The paper's bias score for a model id, dataset name and metric key, if it printed one."""
    return BIAS_SCORES.get(_canonical(model), {}).get(dataset, {}).get(metric)


def _canonical(model: str) -> str:
    """Map 'bert-base-cased', 'google-bert/bert-base-cased' or a path ending in it to the key."""
    tail = model.rstrip("/").rsplit("/", 1)[-1]
    return tail if tail in KANEKO_MODELS else model


__all__ = [
    "BIAS_SCORES",
    "GROUP_SCORES",
    "KANEKO_MODELS",
    "KURITA_ATTRIBUTE_SHARES",
    "KURITA_LIST_SIZES",
    "KURITA_WEAT",
    "SHUFFLE_ACCURACY",
    "TOKEN_ACCURACY",
    "published_bias_score",
]
