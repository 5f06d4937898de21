"""One exception hierarchy: every exception class the package defines derives from
ragcore.RagcoreError and is exported from ragcore. The classes are found by reading the
sources (ast), so a module whose optional dependency is missing (ray, fastapi) is covered
too."""

from __future__ import annotations

import ast
import builtins
from pathlib import Path

import pytest

import ragcore

PACKAGE_DIR = Path(ragcore.__file__).parent


def _class_bases() -> dict:
    """Every class defined in the package: name -> the names of its bases."""
    out = {}
    for path in PACKAGE_DIR.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                names = [b.id if isinstance(b, ast.Name) else getattr(b, "attr", "")
                         for b in node.bases]
                out[f"{path.relative_to(PACKAGE_DIR)}:{node.name}"] = (node.name, names)
    return out


def _defined_exceptions() -> list[str]:
    """The names of the package's exception classes (warnings excluded: they are not raised)."""
    classes = _class_bases()
    found: dict[str, bool] = {}  # name -> is a warning

    def kind(base: str):
        builtin = getattr(builtins, base, None)
        if isinstance(builtin, type) and issubclass(builtin, BaseException):
            return issubclass(builtin, Warning)
        return found.get(base)

    changed = True
    while changed:  # bases may be defined after their subclasses: repeat until stable
        changed = False
        for name, bases in classes.values():
            kinds = [k for k in map(kind, bases) if k is not None]
            if kinds and name not in found:
                found[name] = any(kinds)
                changed = True
    return sorted(name for name, warning in found.items() if not warning)


def test_the_walk_finds_the_exception_classes():
    assert {"RagcoreError", "IndexFileError", "CollectionError", "CollectionLockedError",
            "CollectionCorruptError", "FilterError", "ShardError"} <= set(_defined_exceptions())
    assert "CopyWarning" not in _defined_exceptions()


@pytest.mark.parametrize("name", _defined_exceptions())
def test_every_exception_derives_from_ragcore_error_and_is_exported(name):
    assert name in ragcore.__all__
    assert issubclass(getattr(ragcore, name), ragcore.RagcoreError)


@pytest.mark.parametrize("name, base", [
    ("IndexFileError", ValueError), ("CollectionError", ValueError),
    ("CollectionLockedError", ValueError), ("CollectionCorruptError", ValueError),
    ("FilterError", ValueError), ("ShardError", RuntimeError),
])
def test_the_standard_bases_are_kept(name, base):
    assert issubclass(getattr(ragcore, name), base)


def test_the_submodules_raise_the_same_classes():
    from ragcore.distributed import ShardError
    from ragcore.rag import collection

    assert ShardError is ragcore.ShardError
    assert collection.CollectionError is ragcore.CollectionError
    assert collection.FilterError is ragcore.FilterError
    assert collection.CollectionCorruptError is ragcore.CollectionCorruptError
    assert issubclass(ragcore.CollectionLockedError, ragcore.CollectionError)
    assert issubclass(ragcore.CollectionCorruptError, ragcore.CollectionError)
