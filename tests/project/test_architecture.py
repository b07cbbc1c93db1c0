"""The layout's rules, checked on the source: the core's rooms import only the rooms below
them, the core never imports a family, a family imports no other family, and no module
imports another that (directly or through others) imports it back.

Every import counts: those deferred into functions, `importlib.import_module` calls with a
constant name, a family's parts named by reference (`Lazy`, `Deferred`) and imports under
``if TYPE_CHECKING:`` (an annotation that names a module is a dependency on it, and a cycle
through annotations is still a cycle a reader must untangle).
"""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx

REPO_ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("harness", "relations", "corpora")


def _modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in (REPO_ROOT / package).rglob("*.py"):
            parts = list(path.relative_to(REPO_ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join(parts)] = path
    return found


def _imported_names(module: str, path: Path) -> list[str]:
    """Every module name ``module`` imports, at any depth of its code."""
    is_package = path.name == "__init__.py"
    names: list[str] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = module.split(".") if is_package else module.split(".")[:-1]
                package = package[: len(package) - (node.level - 1)]
                base = ".".join([*package, base] if base else package)
            names.append(base)
            names.extend(f"{base}.{alias.name}" for alias in node.names)
        elif (
            isinstance(node, ast.Call)
            and getattr(node.func, "attr", getattr(node.func, "id", None)) == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
        ):
            names.append(str(node.args[0].value))
        elif isinstance(node, ast.Call) and getattr(node.func, "id", None) in ("Lazy", "Deferred"):
            # A family's parts by reference (harness.plugins.family_refs): "module:attribute"
            # strings the registry imports on first use, so each is an import of that module.
            names.extend(
                str(arg.value).partition(":")[0]
                for arg in node.args
                if isinstance(arg, ast.Constant) and ":" in str(arg.value)
            )
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text(encoding="utf-8")))
    return names


def import_graph() -> nx.DiGraph:
    modules = _modules()
    graph = nx.DiGraph()
    for module, path in modules.items():
        graph.add_node(module)
        for name in _imported_names(module, path):
            # "from a.b import c" names a.b.c: a module if one exists, else a.b.
            while name and name not in modules:
                name = name.rpartition(".")[0]
            if name and name != module:
                graph.add_edge(module, name)
    return graph


def test_the_graph_sees_the_modules_and_their_deferred_imports() -> None:
    graph = import_graph()
    assert graph.number_of_nodes() > 50
    # assembly.build_relation reads the registry; the registry names the parts' types.
    assert graph.has_edge("harness.plugins.assembly", "harness.plugins.family_parts")
    assert graph.has_edge("harness.plugins.family_parts", "harness.plugins.registry")
    assert graph.has_edge("harness.plugins.registry", "harness.vocabulary.relation")
    assert graph.has_edge("relations.metaquerier", "relations.metaquerier.relations")


# The core's rooms, ground floor first: a room imports itself and the rooms before it only.
# Modules at the top of ``harness/`` (the library façade, the public surface for families,
# the core's own registration, the testing kit ``harness.testing``) stand above every room.
ROOMS = (
    "vocabulary",
    "runtime",
    "store",
    "reporting",
    "plugins",
    "models",
    "running",
    "verifying",
    "cli",
)


def room_of(module: str) -> str | None:
    """The room of a core module; None for the top of ``harness/`` and for non-core code."""
    parts = module.split(".")
    if parts[0] != "harness" or len(parts) < 2 or parts[1] not in ROOMS:
        return None
    return parts[1]


def test_every_module_of_the_core_lives_in_a_room_or_at_the_top() -> None:
    top = sorted(m for m in import_graph() if m.startswith("harness.") and m.count(".") == 1)
    loose = [m for m in top if m.split(".")[1] not in ROOMS]
    assert len(loose) <= 10, f"too many modules at the top of harness/: {loose}"
    for room in ROOMS:
        doc = ast.get_docstring(
            ast.parse((REPO_ROOT / "harness" / room / "__init__.py").read_text())
        )
        assert doc and "may import" in doc, (
            f"harness/{room}/__init__.py must say what it may import"
        )


def test_rooms_import_only_the_rooms_below_them() -> None:
    upward = sorted(
        (a, b)
        for a, b in import_graph().edges
        if (ra := room_of(a)) is not None
        and b.startswith("harness")
        and ra != (rb := room_of(b))
        and (rb is None or ROOMS.index(rb) > ROOMS.index(ra))
    )
    assert upward == [], f"imports of a room above (or of the top of harness/): {upward}"


def test_the_testing_kit_is_imported_by_no_module_of_the_core_or_a_family() -> None:
    """``harness.testing`` (which needs hypothesis) is for tests: a room, the façade or a
    family's own module importing it would make a campaign need the ``testing`` extra."""
    importers = sorted(
        a
        for a, b in import_graph().edges
        if (b == "harness.testing" or b.startswith("harness.testing."))
        and not (a == "harness.testing" or a.startswith("harness.testing."))
    )
    assert importers == [], f"modules importing the testing kit: {importers}"


def _private_home(module: str) -> str | None:
    """The package a private module (a name part starting with ``_``) belongs to."""
    parts = module.split(".")
    for i, part in enumerate(parts):
        if part.startswith("_") and not part.startswith("__"):
            return ".".join(parts[:i])
    return None


# The public surfaces re-export names from private modules (as httpx's ``__init__`` does).
SURFACES = ("harness", "harness.family_api")


def test_private_modules_are_imported_only_inside_their_package() -> None:
    leaks = sorted(
        (a, b)
        for a, b in import_graph().edges
        if (home := _private_home(b)) is not None
        and a not in SURFACES
        and a != home
        and not a.startswith(home + ".")
    )
    assert leaks == [], f"private modules imported from outside their package: {leaks}"


def test_the_core_never_imports_a_family() -> None:
    offending = sorted(
        (a, b)
        for a, b in import_graph().edges
        if a.split(".")[0] in ("harness", "corpora") and b.split(".")[0] == "relations"
    )
    assert offending == [], f"core modules importing a family: {offending}"


def test_there_is_no_import_cycle() -> None:
    cycles = [sorted(c) for c in nx.strongly_connected_components(import_graph()) if len(c) > 1]
    assert cycles == [], f"import cycles: {cycles}"


def test_a_family_imports_no_other_family() -> None:
    def family(module: str) -> str | None:
        parts = module.split(".")
        return parts[1] if parts[0] == "relations" and len(parts) > 1 else None

    crossing = sorted(
        (a, b)
        for a, b in import_graph().edges
        if family(a) and family(b) and family(a) != family(b) and family(b) != "_common"
    )
    assert crossing == [], f"families importing each other: {crossing}"


def test_deferred_and_type_checking_imports_count(tmp_path: Path) -> None:
    source = tmp_path / "mod.py"
    source.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from harness.models.sim import SimModel\n"
        "def later():\n    from harness.store.writer import EventWriter\n"
        "    importlib.import_module('harness.verifying.replay')\n",
        encoding="utf-8",
    )
    names = _imported_names("harness.mod", source)
    assert "harness.store.writer" in names and "harness.verifying.replay" in names
    assert "harness.models.sim" in names
    source.write_text(
        'F = Family(relations=(Lazy("x.y", "relations.x.rel:Y"),),'
        ' report_sections=Deferred("relations.x.report:SECTIONS", "relations.z.r:S"))\n',
        encoding="utf-8",
    )
    names = _imported_names("relations.x", source)
    assert {"relations.x.rel", "relations.x.report", "relations.z.r"} <= set(names)


def test_docs_architecture_names_every_module() -> None:
    """The tree in docs/architecture.md stays complete: every module file is named there."""
    doc = (REPO_ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    missing = sorted(
        str(path.relative_to(REPO_ROOT))
        for package in ("harness", "relations")
        for path in (REPO_ROOT / package).rglob("*.py")
        if path.name not in doc or f"{path.parent.name}/" not in doc
    )
    assert missing == [], f"modules missing from docs/architecture.md: {missing}"
