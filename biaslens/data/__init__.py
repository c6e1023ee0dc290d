"""The data layer: what is read from and written to files, before any model is involved.

Datasets (`datasets`: CrowS-Pairs, StereoSet, custom CSVs), data files on this machine (`datafiles`: locate, download,
read with size caps), where a user's file may be (`confine`: the allowed folders a server puts in effect), flag lists
(`flags`), the papers' published numbers (`published`), WEAT stimuli (`weat`), what a sentence is (`sentences`) and
safe writing of results (`export`: atomic writes, CSV, JSON). It imports only the base modules (`biaslens.errors`,
`biaslens.paths`): never torch, a model or anything above it.
"""
