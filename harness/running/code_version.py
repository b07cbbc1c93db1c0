"""What the code version recorded in CampaignStarted covers, and its hash.

What for: replay with changed code must be able to say the code changed, including a third
party's family. The hash covers the core's package, each registered family's own package
directory (found through the registry: the package of the module its entry point names),
the private shared packages beside it (``relations/_common`` beside ``relations/badf``:
names that start with ``_``) and every file of every registered corpus. Nothing here names
a family or a data file.
"""

from __future__ import annotations

import hashlib
import importlib
from collections.abc import Iterator
from pathlib import Path

from harness.plugins.family_parts import corpora, families, family_origin

CODE_SUFFIXES = frozenset({".py", ".csv", ".toml", ".json"})


def code_version() -> str:
    """Content hash of the code and corpora that decide asks and verdicts."""
    digest = hashlib.sha256()
    for label, path in sorted(_hashed_files()):
        digest.update(label.encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def _hashed_files() -> set[tuple[str, Path]]:
    """(label, file): the label is the file's place by import name, so the same code hashes
    the same in a checkout and in an installed wheel."""
    found: set[tuple[str, Path]] = set()
    packages = {"harness"} | {
        p for f in families() if (p := family_package(family_origin(f.name) or "")) is not None
    }
    for package in sorted(packages):
        for root, name in _package_roots(package):
            for path in root.rglob("*") if root.is_dir() else [root]:
                if path.is_file() and path.suffix in CODE_SUFFIXES and _is_source(path):
                    rel = path.relative_to(root).as_posix() if root.is_dir() else ""
                    found.add((f"{name}/{rel}".rstrip("/"), path))
    for family, corpus in corpora():
        for index, path in enumerate(corpus.files):
            found.add((f"corpus {family}/{corpus.name}:{index}", path))
    return found


def family_package(origin: str) -> str | None:
    """The import name of the package that holds a family found at ``origin``
    (``"package.module:ATTRIBUTE"``): the module itself if it is a package, else the package
    it lies in, else the module; None when ``origin`` names no importable module."""
    module_name, sep, _ = origin.partition(":")
    if not sep or not module_name:
        return None
    try:
        module = importlib.import_module(module_name)
    except ImportError:
        return None
    if hasattr(module, "__path__"):
        return module_name
    return module.__package__ or module_name


def _package_roots(package: str) -> Iterator[tuple[Path, str]]:
    """The directories (or the one file) of ``package``, and beside a subpackage the private
    packages its parent shares among its children."""
    module = importlib.import_module(package)
    paths = getattr(module, "__path__", None)
    if paths is None:
        if module.__file__:
            yield Path(module.__file__), package.replace(".", "/") + ".py"
        return
    label = package.replace(".", "/")
    for entry in paths:
        yield Path(entry), label
    parent, _, _ = package.rpartition(".")
    if parent:
        for entry in getattr(importlib.import_module(parent), "__path__", []):
            for shared in sorted(Path(entry).iterdir()):
                if shared.is_dir() and shared.name.startswith("_") and shared.name != "__pycache__":
                    yield shared, f"{parent.replace('.', '/')}/{shared.name}"


def _is_source(path: Path) -> bool:
    return "__pycache__" not in path.parts
