"""PEP 561: the packages a third party imports carry ``py.typed``, so their mypy reads our
annotations instead of treating harness and relations as untyped."""

from __future__ import annotations

import tomllib
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]


def test_every_wheel_package_is_marked_typed() -> None:
    config = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    packages = config["tool"]["hatch"]["build"]["targets"]["wheel"]["packages"]
    assert {"harness", "relations"} <= set(packages)
    assert [p for p in packages if not (REPO_ROOT / p / "py.typed").is_file()] == []
