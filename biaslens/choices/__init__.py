"""Multiple-choice benchmarks (BBQ, Winogender) scored token by token: a layer between the engine and the analyses.

The items are `biaslens.data.multiple_choice`'s. Here: how a model scores each choice after its prompt
(`scoring`: the log-likelihood of the choice's tokens, the prompt computed once for all its choices), the
conventions that turn those scores into answers (`conventions`: lm-evaluation-harness's `bbq` and `winogender_*`
tasks, its length-normalised reading, BBQ's own three answers), their statistics (`statistics`: lm-eval's
`utils.py` to the digit, Parrish et al.'s bias scores, intervals by category x condition x polarity) and a whole
run or one item in detail (`evaluation`: `evaluate_choices`, `inspect_item`, the items whose answer flips between
conventions). It may import `biaslens.engine`, `biaslens.data` and the base modules; `analyses`, the zoo, the
figures, the CLI and the app build on it. It re-exports nothing (import from the modules).
"""
