"""Model zoos: N models × M datasets scored as cluster jobs, kept in a content-addressed results store, read back as one table.

By concern: `plan` (the zoo plan, one TOML file, checked before anything runs: `load_plan`, `ZooPlan`), `store` (the
results store: cells keyed by content, per-pair records and summaries, locks, job records: `ResultsStore`), `worker`
(one model's job: load it once, score every dataset, write each cell: `ZooJob`), `executors` (submitit's Slurm and
local executors and the driver that submits, watches and retries the jobs: `run_plan`), `status` (`plan_status`),
`merge` (`merged_table`: models × datasets × metrics with intervals), `leaderboard` (the app's leaderboard: one row per
model, rank intervals, paired comparisons of two stored models).

A layer beside `lab` and `kurita`: it may import `analyses`, `engine`, `data` and the base, never `figures`, `serving`,
`report` or `cli`. It re-exports nothing: import from the modules.
"""
