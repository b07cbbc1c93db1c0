"""Verifying: what the log proves after the fact.

What lives here: offline replay and ``replay --verify`` (`replay`, with its private quick
and two-process paths `_replay_quick`, `_replay_parallel`, `_request_text`) and re-judging
recorded answers with a new judge (`rejudge`).

What it may import: every room below it (vocabulary, runtime, store, reporting, plug-ins,
models, running). Never the CLI.
"""
