"""Serving biaslens to users (the app): server settings from `BIASLENS_*` (allowed folders, limits), the confinement
of every file opened for a user to the allowed folders (it sets `biaslens.data.confine`), job slots, the inspection
batcher and the pool of loaded models (`server`). The CLI does not use it. It may import the layers below
(`lab`, `kurita`, `analyses`, `engine`, `data`), never `figures`, `report` or `cli`.
"""
