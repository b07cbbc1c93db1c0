"""The layout's rules, checked on the source: the core never imports a family, and no
module imports another that (directly or through others) imports it back.

Every import counts, including those deferred into functions, `importlib.import_module`
calls with a constant name and a family's parts named by reference (`Lazy`, `Deferred`);
imports under ``if TYPE_CHECKING:`` are annotations only (they never run) and are left out.
"""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx

REPO_ROOT = Path(__file__).resolve().parents[1]
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


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imported_names(module: str, path: Path) -> list[str]:
    """Every module name ``module`` imports, at any depth of its code."""
    is_package = path.name == "__init__.py"
    names: list[str] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node):
            for child in node.orelse:
                visit(child)
            return
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
            # A family's parts by reference (harness.family_refs): "module:attribute" strings
            # the registry imports on first use, so each is an import of that module.
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
    # relation.build_relation reads the registry; cli builds the command line from it.
    assert graph.has_edge("harness.relation", "harness.family_parts")
    assert graph.has_edge("harness.family_parts", "harness.registry")
    assert graph.has_edge("relations.metaquerier", "relations.metaquerier.relations")


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


def test_deferred_imports_count_and_type_checking_imports_do_not(tmp_path: Path) -> None:
    source = tmp_path / "mod.py"
    source.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from harness.sim import SimModel\n"
        "def later():\n    from harness.store.writer import EventWriter\n"
        "    importlib.import_module('harness.replay')\n",
        encoding="utf-8",
    )
    names = _imported_names("harness.mod", source)
    assert "harness.store.writer" in names and "harness.replay" in names
    assert "harness.sim" not in names
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
