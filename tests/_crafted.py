"""Index files changed on purpose, with a valid checksum (what an attacker can write)."""

from __future__ import annotations

import numpy as np

from ragcore._util import fileformat


def rewrite(path, kind: str, params: dict | None = None, arrays: dict | None = None,
            drop=()) -> None:
    """Re-writes the index file at path with some params / arrays replaced or dropped;
    the result has a correct checksum, so only the loader's own checks can refuse it."""
    old_params, old_arrays = fileformat.read_index(path, kind)
    new_params = {**old_params, **(params or {})}
    new_arrays = {name: np.array(a) for name, a in old_arrays.items()}
    new_arrays.update(arrays or {})
    for name in drop:
        new_params.pop(name, None)
        new_arrays.pop(name, None)
    fileformat.write_index(path, kind, new_params, new_arrays)


def stored(path, kind: str) -> tuple[dict, dict]:
    """(params, copies of the arrays) of an index file."""
    params, arrays = fileformat.read_index(path, kind)
    return params, {name: np.array(a) for name, a in arrays.items()}


def set_element(path, kind: str, name: str, where, value, view=None) -> None:
    """Re-writes the file with arrays[name][where] = value (through a dtype view if given)."""
    _, arrays = stored(path, kind)
    arr = arrays[name]
    (arr if view is None else arr.view(view))[where] = value
    rewrite(path, kind, arrays={name: arr})
