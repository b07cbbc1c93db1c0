"""References to a family's contributions that are imported on first use, not at start-up.

What for: every ``harness`` command builds the registry, and a family whose ``FAMILY`` object
imports its relations, report, simulated model and CLI makes every command import every
family. A family that describes itself with
these references costs a few dataclasses until something asks for one of its parts:
``harness replay`` of a BiasLens campaign imports the BiasLens relation, never BADF's story
extractor.

- `Lazy` names one contribution looked up by name (a relation, a command, an importer, a
  model backend, a judge rubric). The name is declared beside the target so the registry can
  list names, and apply its duplicate rule, without importing; the registry checks on
  loading that the object carries the declared name.
- `Deferred` stands for contributions that are only ever used all together (report
  sections, sim handlers, the planted-truth options of ``sim:`` models, corpora): they are imported
  when their kind is first listed, and registered then under the same duplicate rule.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from harness.vocabulary.errors import RegistryError


def load_target(target: str, where: str) -> Any:
    """The object a ``"package.module:attribute"`` string names; `RegistryError` else."""
    module_name, sep, attribute = target.partition(":")
    if not sep or not module_name or not attribute:
        raise RegistryError(f"{where}: {target!r} is not of the form 'package.module:attribute'")
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:
        raise RegistryError(f"{where}: {target} failed to import: {exc}") from exc
    try:
        return getattr(module, attribute)
    except AttributeError as exc:
        raise RegistryError(f"{where}: module {module_name} has no {attribute!r}") from exc


@dataclass(frozen=True)
class Lazy:
    """One contribution, registered under ``name`` and imported from ``target`` on first use."""

    name: str
    target: str  # "package.module:attribute"

    def load(self, where: str) -> Any:
        return load_target(self.target, where)


@dataclass(frozen=True)
class Deferred:
    """Contributions of one kind, imported together when that kind is first listed: each
    target names a sequence of them (report sections, sim handlers, corpora) or, for
    ``sim_options``, the one pydantic model of planted truth."""

    targets: tuple[str, ...]

    def __init__(self, *targets: str) -> None:
        object.__setattr__(self, "targets", targets)

    def load(self, where: str) -> list[Any]:
        return [load_target(target, where) for target in self.targets]


def package_attribute(package: str, refs: Iterable[object], name: str) -> Any:
    """For a family package's ``__getattr__`` (PEP 562): the part of ``refs`` whose target
    attribute is ``name``, imported now, so ``from relations.x import Cls`` keeps working
    though the package no longer imports ``Cls`` when it is loaded."""
    for ref in refs:
        if isinstance(ref, Lazy) and ref.target.rpartition(":")[2] == name:
            return ref.load(f"module {package!r}")
    raise AttributeError(f"module {package!r} has no attribute {name!r}")
