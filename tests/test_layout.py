"""The package's import graph: no cycles, no production import of ragcore.reference, no
private name taken from another module. Walks the installed package's sources with ast,
function-level (lazy) imports included."""

from __future__ import annotations

import ast
from pathlib import Path

import ragcore

PACKAGE_DIR = Path(ragcore.__file__).parent
COMPILED = {"ragcore._core", "ragcore._cuda"}


def _module_name(path: Path) -> str:
    parts = ("ragcore",) + path.relative_to(PACKAGE_DIR).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in PACKAGE_DIR.rglob("*.py")}


def _imports(name: str, path: Path):
    """(imported module, names taken from it, line) for each import statement of a module."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, [], node.lineno
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                if sub in MODULES or sub in COMPILED:
                    yield sub, [], node.lineno  # a submodule
                else:
                    yield base, [alias.name], node.lineno


def _graph():
    graph = {name: set() for name in MODULES}
    for name, path in MODULES.items():
        for target, _, _ in _imports(name, path):
            if target in MODULES and target != name:
                graph[name].add(target)
    return graph


def _cycles(graph) -> list:
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_walk_sees_the_package():
    assert {"ragcore.dense.flat", "ragcore.sparse.bm25", "ragcore.rag.fusion",
            "ragcore.reference", "ragcore.cli.main"} <= set(MODULES)
    assert "ragcore.hits" in _graph()["ragcore.dense.flat"]


def test_no_import_cycles():
    assert _cycles(_graph()) == []


def test_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_production_code_never_imports_reference():
    offenders = [f"{name}:{line}" for name, path in MODULES.items()
                 if not name.startswith("ragcore.reference")
                 for target, _, line in _imports(name, path)
                 if target == "ragcore.reference" or target.startswith("ragcore.reference.")]
    assert offenders == []


def _private_to_others(importer: str, target: str) -> bool:
    """Whether target is a private module (a part named _x) of a package importer is not in.
    ragcore._util is the shared private home, and _core / _cuda the compiled modules."""
    parts = target.split(".")
    for i, part in enumerate(parts[1:], start=1):
        owner = ".".join(parts[:i])
        if part.startswith("_") and not (importer == owner or importer.startswith(owner + ".")):
            return True
    return False


def test_no_private_names_from_other_modules():
    offenders = [f"{name}:{line} takes {taken or 'module'} from {target}"
                 for name, path in MODULES.items()
                 for target, names, line in _imports(name, path)
                 if target.startswith("ragcore") and target != name
                 for taken in (names or [None])
                 if (taken or "").startswith("_") or _private_to_others(name, target)]
    assert offenders == []


def test_private_module_rule():
    assert _private_to_others("ragcore.rag.chunking", "ragcore.encoders._text")
    assert _private_to_others("ragcore.reference.dense", "ragcore.dense._storage")
    assert not _private_to_others("ragcore.dense.flat", "ragcore.dense._storage")
    assert not _private_to_others("ragcore.rag.fusion", "ragcore._util.arrays")
    assert not _private_to_others("ragcore.sparse.bm25", "ragcore._core")
