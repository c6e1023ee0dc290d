"""The engine: models and the scoring of pairs with them.

Loading a model (`models`, the offered `presets`), the forward passes (`scoring`, their plain data in `passes`), the
metric registry (`metrics`), token alignment (`alignment`), the batched scoring of encoded pairs (`pairs`), one pair in
detail and whole datasets (`evaluation`, through `runner`'s chunked, cached, resumable loop, the `cache`, `parallel`
processes and the `exact` bf16 precision), the typed run `options`, the statistics the summaries use (`stats`) and
random-weight models for tests (`testing`). It may import `biaslens.data` and the base modules, nothing above.
"""
