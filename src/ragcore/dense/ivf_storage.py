"""The registry of IVFIndex storages: dtype -> the class that keeps, scans, re-scores,
saves and loads the vectors of that dtype (the interface: _ivf_storage_base.IvfStorage)."""

from __future__ import annotations

from ._ivf_pq4 import Pq4Storage
from ._ivf_rows import Bf16Storage, FloatStorage, Sq8Storage
from ._ivf_storage_base import IvfStorage
from .ivf_rabitq import RabitqStorage

STORAGES: dict[str, type[IvfStorage]] = {
    "float32": FloatStorage, "float16": FloatStorage, "bfloat16": Bf16Storage,
    "sq8": Sq8Storage, "pq4": Pq4Storage, "rabitq": RabitqStorage,
}
DTYPES = tuple(STORAGES)
# Files written before the 8-bit code took the name "sq8" call it "int8" (same code and layout).
FILE_DTYPE_RENAMES = {"int8": "sq8"}


def make_storage(dtype: str, dim: int, metric: str, seed: int, options: dict) -> IvfStorage:
    """The storage of a checked dtype with these IVFIndex keyword options; an option of
    another storage is a ValueError naming the dtypes that take it."""
    cls = STORAGES[dtype]
    for name in options:
        if name in cls.OPTIONS:
            continue
        takers = [d for d, c in STORAGES.items() if name in c.OPTIONS]
        if not takers:
            raise TypeError(f"IVFIndex() got an unexpected keyword argument {name!r}")
        raise ValueError(f"{name} applies to dtype={' or '.join(map(repr, takers))} only, "
                         f"not dtype={dtype!r}")
    return cls(dtype, dim, metric, seed, **options)


def dtypes_with(attribute: str) -> list[str]:
    """The dtypes whose storage has this attribute (a storage's own feature)."""
    return [d for d, c in STORAGES.items() if hasattr(c, attribute)]
