"""Data with provenance: the plain CSV/TOML/JSON files the families read, and the generic
helpers to read them.

`PROVENANCE.md` names where every fact came from. Which family reads which file, and how,
lives in that family (``relations/<family>/corpus.py``, declared as its `Corpus` parts and
listed by ``harness corpora``); this package only finds and reads files. TOML is parsed once
per process.
"""

from __future__ import annotations

import tomllib
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

PROVENANCE = "corpora/PROVENANCE.md"


def data_file(name: str) -> Path:
    """The path of ``name`` (e.g. ``"badf/locations.toml"``) in this package."""
    return Path(__file__).resolve().parent / name


def read_text(name: str) -> str:
    """The text of ``name`` (UTF-8), read through importlib.resources."""
    return resources.files(__name__).joinpath(name).read_text(encoding="utf-8")


@cache
def load_toml(name: str) -> dict[str, Any]:
    """``name`` parsed as TOML, once per process."""
    return tomllib.loads(read_text(name))
