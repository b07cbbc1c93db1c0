"""Running: a campaign from its file to its last committed event.

What lives here: campaign files (`campaign`, the embedded `campaigns/`), the lazy plan
(`plan`), the engine and its pieces (`engine`, `case_log`, `resume_step`, `calls`,
`call_deadlines`, `gates`, `per_loop`, `retry`, `reachability`), run and resume (`runner`),
PostgreSQL workers (`worker`, `worker_ends`, `worker_reclaim`) and the answer cache across
campaigns (`cache`).

What it may import: every room below it (vocabulary, runtime, store, reporting, plug-ins,
models). Never verifying or the CLI.
"""
