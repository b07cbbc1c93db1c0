"""The one registry of the harness: families and everything they contribute.

A relation *family* (``relations/metaquerier``, a third party's package...) describes
itself with one `Family` object: its relations, report sections, simulated-model handlers
and planted truth, judge rubric, model backends, CLI commands and importers. The registry
finds families through the ``bias_harness.families`` entry-point group, so a family
shipped as its own distribution is found exactly like a built-in one, and nothing in the
core names a family. Why entry points rather than a list in the core: a list would make the
core import every family (the coupling this layout removes) and would force a third party
to edit our code.

One rule for duplicates, for every kind of entry: a name may be registered once; a second
registration of the same name, even of the same object, raises `RegistryError` naming both
places. Registration order never decides behaviour: listings are sorted by name (and
report sections and sim handlers by their declared order, then name).

A family may name its parts by reference (`harness.plugins.family_refs.Lazy` and `Deferred`): the
registry then imports each part on first use, so a command pays only for the families and
parts it touches. Names declared by reference obey the same duplicate rule at once; the parts
of a `Deferred` obey it when their kind is first listed.
"""

from __future__ import annotations

import importlib.metadata
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from harness.plugins.family_refs import Deferred, Lazy
from harness.vocabulary.errors import RegistryError

if TYPE_CHECKING:
    import click
    from pydantic import BaseModel

    from harness.reporting.tables import ReportSection
    from harness.vocabulary.corpus import Corpus
    from harness.vocabulary.model import ModelFactory
    from harness.vocabulary.relation import RelationBase
    from harness.vocabulary.rubric import JudgeRubric
    from harness.vocabulary.simulation import SimHandler

ENTRY_POINT_GROUP = "bias_harness.families"

Kind = Literal[
    "family",
    "relation",
    "model backend",
    "report section",
    "command",
    "importer",
    "sim handler",
    "sim option",
    "judge rubric",
    "corpus",
]


@dataclass(frozen=True)
class Family:
    """Everything one relation family contributes to the harness.

    ``judge_rubric`` applies to every relation of the family; ``sim_options`` is a pydantic
    model whose fields become options of ``sim:`` models (the family's planted truth),
    handed to its sim handlers through `SimRequest.planted`. ``corpora`` are the data files
    the family reads (listed by ``harness corpora``, hashed into the code version). Any part
    may be given by reference (`Lazy` for a named part, `Deferred` for parts used all
    together), so that describing the family imports nothing of it.
    """

    name: str
    summary: str
    relations: Sequence[type[RelationBase] | Lazy] = ()
    report_sections: Sequence[ReportSection] | Deferred = ()
    sim_handlers: Sequence[SimHandler] | Deferred = ()
    sim_options: type[BaseModel] | Deferred | None = None
    judge_rubric: JudgeRubric | Lazy | None = None
    model_backends: Mapping[str, ModelFactory | Lazy] = field(default_factory=dict)
    commands: Sequence[click.Command | Lazy] = ()
    importers: Sequence[click.Command | Lazy] = ()
    docs: Path | None = None
    corpora: Sequence[Corpus] | Deferred = ()


@dataclass(frozen=True)
class Entry:
    kind: Kind
    name: str
    value: Any  # a `Lazy` until first used
    origin: str  # where it came from, for the duplicate error
    family: str = ""


class Registry:
    """Name -> entry, per kind; every addition goes through `add`."""

    def __init__(self) -> None:
        self._entries: dict[tuple[Kind, str], Entry] = {}
        # Parts given as `Deferred`, per kind, until that kind is first listed: (parts,
        # where, family name).
        self._deferred: dict[Kind, list[tuple[Deferred, str, str]]] = {}
        # Family name -> where it was found ("package.module:ATTRIBUTE" for an entry point).
        self._origins: dict[str, str] = {}
        # Threads share the registry (a server answering in threads builds a sim model per
        # request): while one imports a kind's parts, the others wait for all of them rather
        # than see the part of the list registered so far. Re-entrant: an import may list.
        self._lock = threading.RLock()
        self._expanding: set[Kind] = set()

    def add(self, kind: Kind, name: str, value: Any, origin: str, family: str = "") -> None:
        key = (kind, name)
        if not name:
            raise RegistryError(f"a {kind} from {origin} has no name")
        previous = self._entries.get(key)
        if previous is not None:
            raise RegistryError(
                f"{kind} {name!r} is registered twice: by {previous.origin} and by {origin}"
            )
        self._entries[key] = Entry(kind, name, value, origin, family)

    def names(self, kind: Kind) -> list[str]:
        """The names registered for ``kind``, sorted, without importing any part by name."""
        self._expand(kind)
        return sorted(name for (k, name) in self._entries if k == kind)

    def entries(self, kind: Kind) -> list[Entry]:
        """Every entry of ``kind``, sorted by name, each part imported if it was not yet."""
        self._expand(kind)
        found = sorted((e for (k, _), e in self._entries.items() if k == kind), key=_by_name)
        return [self._loaded(entry) for entry in found]

    def get(self, kind: Kind, name: str) -> Any | None:
        self._expand(kind)
        entry = self._entries.get((kind, name))
        return self._loaded(entry).value if entry is not None else None

    def _loaded(self, entry: Entry) -> Entry:
        """``entry`` with its part imported and checked (once; the entry is replaced)."""
        if not isinstance(entry.value, Lazy):
            return entry
        with self._lock:
            current = self._entries[(entry.kind, entry.name)]
            if not isinstance(current.value, Lazy):
                return current  # another thread loaded it meanwhile
            where = f"{entry.kind} {entry.name!r} of {entry.origin}"
            value = entry.value.load(where)
            _check_loaded(entry, value, where)
            loaded = Entry(entry.kind, entry.name, value, entry.origin, entry.family)
            self._entries[(entry.kind, entry.name)] = loaded
            return loaded

    def _expand(self, kind: Kind) -> None:
        if kind not in self._deferred:
            return  # nothing deferred, or every part registered (the common case: no lock)
        with self._lock:
            # Removed only once every part is registered, so another thread that finds the
            # kind here waits on the lock; this thread, re-entering, finds it being expanded.
            pending = self._deferred.get(kind)
            if pending is None or kind in self._expanding:
                return
            self._expanding.add(kind)
            try:
                for deferred, where, family in pending:
                    parts = deferred.load(f"the {kind}s of {where}")
                    if kind == "sim option":
                        for model in parts:
                            self._add_sim_options(model, where)
                        continue
                    for part in (p for sequence in parts for p in sequence):
                        self.add(kind, part.name, part, where, family)
            finally:
                self._expanding.discard(kind)
                del self._deferred[kind]

    def add_family(self, family: Family, origin: str) -> None:
        """Register a family and each of its contributions under its origin."""
        where = f"family {family.name!r} ({origin})"
        self.add("family", family.name, family, where)
        self._origins[family.name] = origin
        for relation in family.relations:
            if not isinstance(relation, Lazy) and relation.family != family.name:
                raise RegistryError(
                    f"relation {relation.name!r} says it belongs to family "
                    f"{relation.family!r}, but {where} lists it"
                )
            self.add("relation", relation.name, relation, where, family.name)
        self._add_parts("report section", family.report_sections, where, family.name)
        self._add_parts("sim handler", family.sim_handlers, where, family.name)
        self._add_parts("corpus", family.corpora, where, family.name)
        if isinstance(family.sim_options, Deferred):
            self._deferred.setdefault("sim option", []).append(
                (family.sim_options, where, family.name)
            )
        elif family.sim_options is not None:
            self._add_sim_options(family.sim_options, where)
        if family.judge_rubric is not None:
            self.add("judge rubric", family.name, family.judge_rubric, where)
        for scheme, factory in family.model_backends.items():
            self.add("model backend", scheme, factory, where)
        for command in family.commands:
            self.add("command", _command_name(command), command, where)
        for importer in family.importers:
            self.add("importer", _command_name(importer), importer, where)

    def _add_sim_options(self, model: type[BaseModel], where: str) -> None:
        """Each field of a planted-truth model is a ``sim:`` option of its own name."""
        for option in model.model_fields:
            self.add("sim option", option, model, where)

    def origin(self, family: str) -> str | None:
        """Where family ``family`` was found: its entry point's ``"package.module:ATTRIBUTE"``,
        or what `register_family` / `extra_family` were given."""
        return self._origins.get(family)

    def _add_parts(
        self, kind: Kind, parts: Sequence[Any] | Deferred, where: str, family: str
    ) -> None:
        if isinstance(parts, Deferred):
            self._deferred.setdefault(kind, []).append((parts, where, family))
            return
        for part in parts:
            self.add(kind, part.name, part, where, family)


def _check_loaded(entry: Entry, value: Any, where: str) -> None:
    """A part imported by reference must be what its declaration said it is."""
    if entry.kind == "relation":
        name, family = getattr(value, "name", None), getattr(value, "family", None)
        if name != entry.name or family != entry.family:
            raise RegistryError(
                f"{where}: {entry.value.target} is relation {name!r} of family {family!r}, "
                f"not relation {entry.name!r} of family {entry.family!r}"
            )
    elif entry.kind in ("command", "importer"):
        name = getattr(value, "name", None)
        if name != entry.name:
            raise RegistryError(
                f"{where}: {entry.value.target} is a command named {name!r}, not {entry.name!r}"
            )
    elif entry.kind == "model backend" and not callable(value):
        raise RegistryError(f"{where}: {entry.value.target} is not callable")


def _by_name(entry: Entry) -> str:
    return entry.name


def _command_name(command: click.Command | Lazy) -> str:
    return command.name or ""


# --- discovery ----------------------------------------------------------------------------

FamilySource = Callable[[], Iterator[tuple[Family, str]]]


def entry_point_families() -> Iterator[tuple[Family, str]]:
    """Every family installed under the ``bias_harness.families`` entry-point group."""
    for ep in sorted(importlib.metadata.entry_points(group=ENTRY_POINT_GROUP), key=_ep_name):
        try:
            family = ep.load()
        except Exception as exc:
            raise RegistryError(
                f"family entry point {ep.name!r} ({ep.value}) failed to load: {exc}"
            ) from exc
        if not isinstance(family, Family):
            raise RegistryError(
                f"entry point {ep.name!r} ({ep.value}) is a {type(family).__name__}, not a Family"
            )
        if family.name != ep.name:
            raise RegistryError(
                f"entry point {ep.name!r} ({ep.value}) describes family {family.name!r}; "
                "name the entry point after the family"
            )
        yield family, ep.value


def _ep_name(ep: importlib.metadata.EntryPoint) -> str:
    return ep.name


_registry: Registry | None = None
_extra: list[tuple[Family, str]] = []


def registry() -> Registry:
    """The registry of every discovered family, built once on first use."""
    global _registry
    if _registry is None:
        built = Registry()
        for family, origin in [*entry_point_families(), *_extra]:
            built.add_family(family, origin)
        _registry = built
    return _registry


def register_family(family: Family, origin: str) -> None:
    """Register a family that is not installed as an entry point (tests, notebooks)."""
    if _registry is not None:
        _registry.add_family(family, origin)
    _extra.append((family, origin))


@contextmanager
def extra_family(family: Family, origin: str = "test") -> Iterator[Registry]:
    """Register one more family for the duration of a block (tests, notebooks)."""
    global _registry
    _extra.append((family, origin))
    _registry = None
    try:
        yield registry()
    finally:
        _extra.remove((family, origin))
        _registry = None
