"""Where a bias lives: the anatomy views of a pair (a floor above the engine; may import `engine`, `data` and the base).

`attribution.py` (integrated gradients and gradient x input over the input tokens), `lens.py` (the logit lens: each
token's log p at every layer, the margin per layer), `heads.py` (every head's ablation, AULA's shares per head, a
dataset's head ranking), all taking apart one score, the metric in focus (`focus.py`). The engine gives the hooks
(`biaslens/engine/internals.py`, `LanguageModel.layer_states` / `final_norm` / `body`); nothing here branches on a
model's kind. docs/anatomy.md explains each view, its formula and its limits.
"""
