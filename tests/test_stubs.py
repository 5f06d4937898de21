"""The type stubs (src/ragcore/_core.pyi, _cuda.pyi) agree with the built native modules.

The stubs are written by hand (they carry the docs); this test fails when a binding is added,
removed or renamed without its stub. It compares the public names of each module, each
class's public members (methods, properties, enum members) and their kind, and each
function's parameters: names, order and the `/` and `*` markers, read from the first line of
pybind11's __doc__, `name(a: T, *, b: U = ...) -> R`. Types and defaults are not compared.
pybind11 calls a parameter without py::arg `arg0`, `arg1`...: those can only be passed by
position, so the stub may name them freely but must make them positional-only.
"""

import ast
import importlib
import inspect
import re
from pathlib import Path

import pytest

ANY_NAME = None  # a live `argN`: the stub's name is free
PROTOCOL = {"__init__", "__len__", "__iter__", "__getitem__", "__contains__", "__call__"}


def _split_top_level(text):
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += (ch in "[(<{") - (ch in "])>}")
        if ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    return [p.strip() for p in parts + [text[start:]] if p.strip()]


def live_params(fn):
    """Parameter names from pybind11's signature line; None where there is none to read."""
    doc = getattr(fn, "__doc__", None) or ""
    line = doc.partition("\n")[0]
    if "Overloaded function." in doc or "(" not in line or ") -> " not in line:
        return None
    names = [p.split(":")[0].split("=")[0].strip()
             for p in _split_top_level(line[line.index("(") + 1:line.rindex(") -> ")])]
    unnamed = [i for i, n in enumerate(names) if re.fullmatch(r"arg\d+", n)]
    if unnamed and "/" not in names:
        names.insert(unnamed[-1] + 1, "/")
    return [ANY_NAME if i in unnamed else n for i, n in enumerate(names)]


def stub_params(fn):
    a = fn.args
    out = [p.arg for p in a.posonlyargs] + ["/"] * bool(a.posonlyargs) + [p.arg for p in a.args]
    if a.vararg:
        out.append("*" + a.vararg.arg)
    elif a.kwonlyargs:
        out.append("*")
    out += [p.arg for p in a.kwonlyargs]
    return out + (["**" + a.kwarg.arg] if a.kwarg else [])


def _public(name):
    return not name.startswith("_")


def class_members(cls, classes):
    """stub_members of a class, with those of its bases defined in the same stub."""
    out = {}
    for base in cls.bases:
        if isinstance(base, ast.Name) and base.id in classes:
            out.update(class_members(classes[base.id], classes))
    return out | stub_members(cls.body)


def stub_members(body):
    """{name: node} of a module or class body."""
    out = {}
    for node in body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef)):
            out[node.name] = node
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            out[node.target.id] = node
        elif isinstance(node, ast.ImportFrom):  # `from m import X as X`: a re-export
            out.update((a.name, node) for a in node.names if a.asname == a.name)
    return out


def stub_kind(node):
    if isinstance(node, ast.ClassDef):
        return "class"
    if isinstance(node, ast.FunctionDef):
        is_property = any(isinstance(d, ast.Name) and d.id == "property"
                          for d in node.decorator_list)
        return "property" if is_property else "function"
    return "attribute"


def live_kind(obj):
    if inspect.isclass(obj):
        return "class"
    if isinstance(obj, property):
        return "property"
    return "function" if callable(obj) else "attribute"


def compare(where, live, stub, classes, problems):
    """Appends what differs between a live module or class and its stub members."""
    names = {n for n in dir(live) if _public(n)}
    if inspect.isclass(live):
        names |= PROTOCOL & set(vars(live))
    stub = {n: node for n, node in stub.items() if _public(n) or n in PROTOCOL}
    if missing := sorted(names - set(stub)):
        problems.append(f"{where}: in the module, missing from the stub: {', '.join(missing)}")
    if extra := sorted(set(stub) - names):
        problems.append(f"{where}: in the stub, not in the module: {', '.join(extra)}")
    for name in sorted(names & set(stub)):
        obj, node, path = inspect.getattr_static(live, name), stub[name], f"{where}.{name}"
        if isinstance(node, ast.ImportFrom):
            continue  # a re-export (_cuda's Metric): checked against its own stub
        if (kind := live_kind(obj)) != stub_kind(node):
            problems.append(f"{path}: {kind} in the module, {stub_kind(node)} in the stub")
        elif isinstance(node, ast.ClassDef):
            compare(path, obj, class_members(node, classes), classes, problems)
        elif kind == "function" and (want := live_params(getattr(live, name))) is not None:
            got = stub_params(node)
            if len(want) != len(got) or any(w not in (ANY_NAME, g) for w, g in zip(want, got)):
                shown = ", ".join("<any>" if w is ANY_NAME else w for w in want)
                problems.append(f"{path}: parameters ({', '.join(got)}) in the stub, "
                                f"({shown}) in the module")


def _classes(tree):
    return {node.name: node for node in tree.body if isinstance(node, ast.ClassDef)}


def stub_problems(module, stub_path):
    tree = ast.parse(Path(stub_path).read_text())
    classes = _classes(tree)
    for node in tree.body:  # `from ragcore._core import _NativeEnum`: a base in a sibling stub
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("ragcore."):
            sibling = Path(stub_path).with_name(node.module.split(".")[-1] + ".pyi")
            classes = _classes(ast.parse(sibling.read_text())) | classes
    problems = []
    compare(module.__name__, module, stub_members(tree.body), classes, problems)
    return problems


def _module(name):
    if name == "_cuda":  # built only where nvcc was found
        return pytest.importorskip("ragcore._cuda")
    return importlib.import_module(f"ragcore.{name}")


@pytest.mark.parametrize("name", ["_core", "_cuda"])
def test_stub_matches_the_native_module(name):
    module = _module(name)
    problems = stub_problems(module, Path(module.__file__).with_name(f"{name}.pyi"))
    assert not problems, "the stub and the module differ:\n" + "\n".join(problems)


def test_a_stale_stub_is_reported(tmp_path):
    module = _module("_core")
    text = Path(module.__file__).with_name("_core.pyi").read_text()
    stale = tmp_path / "_core.pyi"
    stale.write_text(text.replace("    BlockMaxPruning: ClassVar[QueryAlgorithm]", "    #")
                     .replace("def pq4_pack(codes:", "def pq4_pack(code:")
                     + "\ndef gone() -> None: ...\n")
    assert stub_problems(module, stale) == [
        "ragcore._core: in the stub, not in the module: gone",
        "ragcore._core.QueryAlgorithm: in the module, missing from the stub: BlockMaxPruning",
        "ragcore._core.pq4_pack: parameters (code, m) in the stub, (codes, m) in the module",
    ]
