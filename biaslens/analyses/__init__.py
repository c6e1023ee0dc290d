"""The analyses: tables computed from the engine's scores.

The papers' tables (`papers`), shuffle sensitivity (`shuffle`), word frequency (`frequency`), agreement between
metrics (`agreement`), paired comparisons of two models (`paired`), StereoSet's LM / SS / ICAT scores
(`stereoset_scores`), the tables behind the app's views (`explore`) and the sanity check of a model (`sanity`). They
return DataFrames and dataclasses, never figures; they may import `biaslens.engine`, `biaslens.data` and the base
modules, never `lab`, `kurita`, `figures` or anything above.
"""
