# Recipes for the common jobs. `just --list` shows them.
set export
UV_PYTHON_DOWNLOADS := "never"

# Run the embedded demo campaign on the local SmolLM2 model (no API key).
demo:
    uv run --extra local harness run demo --db demo.db

# Run the simulated-model campaign (planted biases, fast).
sim:
    uv run harness run sim --db sim.db

# The whole test suite (what CI runs; every extra: the local model, PostgreSQL, Parquet, embedder).
test *ARGS:
    uv run --all-extras pytest {{ARGS}}

# Fast tests only (no real local model, no slow kill tests).
test-fast:
    uv run --all-extras pytest -m "not local_model and not slow"

# Lint and type-check.
lint:
    uv run --all-extras ruff check .
    uv run --all-extras ruff format --check harness relations corpora
    uv run --all-extras mypy

# Benchmarks (print their figures; see bench/RESULTS.md).
bench:
    uv run python bench/bench_engine.py
    uv run python bench/bench_rate_budget.py
