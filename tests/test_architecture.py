"""The import rule of docs/architecture.md: icefloe's packages form layers, and no module imports
from a higher layer (or from a package of its own layer that imports it back).

Every module of ``python/icefloe`` is parsed with :mod:`ast`, so imports inside functions and
under ``if TYPE_CHECKING:`` count as much as top-level ones. A unit is a top-level module
(``icefloe/durable.py``) or package (``icefloe/io/``). The package root ``icefloe/__init__.py`` is
the facade: it may import only the bottom layer when the package is imported (its other exports
are imported on first use), and every layer may import it.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "python" / "icefloe"

#: Each unit's layer: a unit imports only units of lower layers, or of its own layer as long
#: as the imports between units stay free of cycles.
LAYERS: dict[str, int] = {
    # 0, the base: errors, the Rust extension, the shared executors, identity-keyed memos,
    # progress reporting
    "exceptions": 0,
    "_native": 0,
    "_concurrency": 0,
    "_identity_memo": 0,
    "progress": 0,
    # 1, settings and storage: table properties, FileIO, the object-store clients and a
    # table's location rules
    "properties": 1,
    "io": 1,
    "filesystems": 1,
    "table_paths": 1,
    "durable": 1,
    "s3client": 1,
    "sigv4": 1,
    # 2, the model: types, schemas, transforms, specs, expressions, metadata, manifest and
    # delete-file codecs
    "types": 2,
    "values": 2,
    "geo": 2,
    "variant": 2,
    "schema": 2,
    "schema_rules": 2,
    "nesting": 2,
    "evolution": 2,
    "name_mapping": 2,
    "arrow_schema": 2,
    "arrow_fill": 2,
    "transforms": 2,
    "partitioning": 2,
    "sorting": 2,
    "expressions": 2,
    "metadata": 2,
    "manifest": 2,
    "deletes": 2,
    "puffin": 2,
    # 3, planning: manifest reading, filters, scan tasks
    "scan": 3,
    # 4, reading planned tasks into Arrow
    "read": 4,
    # 5, writing data and delete files (never committing them)
    "write": 5,
    # 6, tables, transactions, snapshot producers and every action that commits
    "table": 6,
    # 7, catalogs (they implement table.committer.Committer)
    "catalog": 7,
    # 8, Delta Lake tables read as Iceberg
    "delta": 8,
    # 9, Spark integration
    "spark": 9,
    # 10, the REST catalog server
    "rest": 10,
    # 11, applications: the command line and the demo
    "cli": 11,
    "__main__": 11,
    "demo": 11,
}
ROOT = "__init__"


@dataclass(frozen=True)
class Import:
    """One import of another unit: where it is and what it names."""

    module: str  # dotted name of the importing module
    line: int
    source: str  # importing unit
    target: str  # imported unit
    eager: bool  # runs when the module is imported (not in a function or TYPE_CHECKING)


def _units(package: Path) -> set[str]:
    out = {p.stem for p in package.glob("*.py")} | {
        p.name.split(".")[0] for p in package.glob("*.so")
    }
    out |= {p.name for p in package.iterdir() if (p / "__init__.py").exists()}
    out |= {p.stem for p in package.glob("*.pyi")}
    return out


def _is_type_checking(node: ast.If) -> bool:
    t = node.test
    return (isinstance(t, ast.Name) and t.id == "TYPE_CHECKING") or (
        isinstance(t, ast.Attribute) and t.attr == "TYPE_CHECKING"
    )


def _walk(node: ast.AST, eager: bool) -> Iterator[tuple[ast.AST, bool]]:
    for child in ast.iter_child_nodes(node):
        lazy = isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) or (
            isinstance(child, ast.If) and _is_type_checking(child)
        )
        yield child, eager and not lazy
        yield from _walk(child, eager and not lazy)


def imports(package: Path) -> list[Import]:
    """Every import between units of ``package`` (a directory named like the package)."""
    name = package.name
    units = _units(package)
    found: list[Import] = []
    for path in sorted(package.rglob("*.py")):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        in_init = parts[-1] == "__init__"
        if in_init:
            parts = parts[:-1]
        module = ".".join(parts)
        unit = parts[1] if len(parts) > 1 else ROOT
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node, eager in _walk(tree, True):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    pkg = parts if in_init else parts[:-1]
                    base = pkg[: len(pkg) - node.level + 1]
                    origin = ".".join([*base, *([node.module] if node.module else [])])
                else:
                    origin = node.module or ""
                if origin == name:
                    # ``from icefloe import x``: the submodule x, or a name of the root
                    targets = [f"{name}.{a.name}" if a.name in units else name for a in node.names]
                else:
                    targets = [origin]
            for target in targets:
                dotted = target.split(".")
                if dotted[0] != name:
                    continue
                other = dotted[1] if len(dotted) > 1 else ROOT
                if other != unit:
                    found.append(Import(module, node.lineno, unit, other, eager))
    return found


def violations(package: Path, layers: dict[str, int]) -> list[str]:
    """What breaks the rule: unranked units, upward imports, cycles between units, eager imports
    of the root beyond the bottom layer."""
    edges = imports(package)
    problems = [
        f"{u}: not in LAYERS (give it a layer in tests/test_architecture.py and "
        "docs/architecture.md)"
        for u in sorted(_units(package) - set(layers) - {ROOT})
    ]
    bottom = min(layers.values())
    for e in edges:
        if e.source == ROOT:
            if e.eager and layers.get(e.target, bottom + 1) > bottom:
                problems.append(
                    f"{e.module}:{e.line}: the package root imports {e.target} eagerly "
                    "(import it on first use)"
                )
            continue
        if e.target == ROOT or e.source not in layers or e.target not in layers:
            continue
        if layers[e.target] > layers[e.source]:
            problems.append(
                f"{e.module}:{e.line}: {e.source} (layer {layers[e.source]}) imports "
                f"{e.target} (layer {layers[e.target]})"
            )
    graph: dict[str, set[str]] = {}
    for e in edges:
        if ROOT not in (e.source, e.target):
            graph.setdefault(e.source, set()).add(e.target)
    for cycle in _cycles(graph):
        lines = sorted(
            f"{e.module}:{e.line} -> {e.target}"
            for e in edges
            if e.source in cycle and e.target in cycle
        )
        problems.append(f"import cycle between {sorted(cycle)}: " + "; ".join(lines))
    return problems


def _cycles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components with more than one unit (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[set[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.add(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(comp)

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_icefloe_imports_only_downward() -> None:
    problems = violations(PACKAGE, LAYERS)
    assert not problems, "\n".join(problems)


def test_importing_icefloe_loads_only_the_base() -> None:
    import subprocess
    import sys

    code = (
        "import sys, icefloe.types\n"
        "print(sorted(m for m in sys.modules if m.startswith('icefloe')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert eval(out) == ["icefloe", "icefloe._native", "icefloe.exceptions", "icefloe.types"]


def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "icefloe"
    for rel, text in {"__init__.py": "", **files}.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        for parent in path.relative_to(root).parents:
            if str(parent) != ".":
                (root / parent / "__init__.py").touch()
    return root


@pytest.mark.parametrize(
    "text",
    [
        "from icefloe.table.table import Table\n",
        "import icefloe.table.table\n",
        "def f():\n    from icefloe.table import Table\n",
        "import typing\nif typing.TYPE_CHECKING:\n    from icefloe.table import Table\n",
        "from .. import table\n",
    ],
    ids=["from", "import", "function-local", "type-checking", "relative"],
)
def test_an_upward_import_is_reported(tmp_path: Path, text: str) -> None:
    root = _package(tmp_path, {"write/files.py": text, "table/table.py": "Table = 1\n"})
    assert violations(root, {"write": 5, "table": 6}) == [
        f"icefloe.write.files:{text.count(chr(10))}: write (layer 5) imports table (layer 6)"
    ]


def test_a_cycle_within_a_layer_is_reported(tmp_path: Path) -> None:
    root = _package(
        tmp_path,
        {"schema.py": "from icefloe import types\n", "types.py": "import icefloe.schema\n"},
    )
    (problem,) = violations(root, {"schema": 2, "types": 2})
    assert problem.startswith("import cycle between ['schema', 'types']")


def test_an_unranked_unit_and_an_eager_root_import_are_reported(tmp_path: Path) -> None:
    root = _package(
        tmp_path, {"__init__.py": "from icefloe.table import Table\n", "table/__init__.py": ""}
    )
    assert violations(root, {"exceptions": 0}) == [
        "table: not in LAYERS (give it a layer in tests/test_architecture.py and "
        "docs/architecture.md)",
        "icefloe:1: the package root imports table eagerly (import it on first use)",
    ]
