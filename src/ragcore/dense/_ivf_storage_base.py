"""What IVFIndex asks of the storage of its lists (ivf_storage.STORAGES names each one):
the options it takes, the row it keeps for a vector, its native scan with the exact
re-scoring, and the fields it saves and loads. IVFIndex itself owns the coarse
quantizer, the ids, the list layout and the checks every storage shares."""

from __future__ import annotations

from dataclasses import dataclass, replace
from itertools import count

import numpy as np

from .._util.arrays import check_positive_int
from .._util.file_checks import FileFields
from ._lists import Lists
from ..hits import Hits

_OWNERS = count(1)  # 0 asks the native search to keep no report
DEFAULT_RESCORE = 4  # candidates re-scored exactly per result, where rescore is a count


@dataclass(frozen=True)
class Coarse:
    """The trained coarse quantizer as the native scans take it, swapped in as one object."""
    centroids: np.ndarray  # float32 [nlist, dim]
    sq_norms: np.ndarray   # float32 [nlist]
    metric: object         # the native Metric


class Snapshot:
    """One Lists and what a storage derives from it for its scan (fast-scan blocks), held
    as one object so that a search never pairs the rows of one Lists with the blocks of
    another. ``derived`` may be filled on the first search (two racing searches build
    the same value)."""
    __slots__ = ("lists", "derived")

    def __init__(self, lists: Lists, derived=None):
        self.lists = lists
        self.derived = derived


class IvfStorage:
    """One way of keeping an IVFIndex's vectors; one instance per index, holding the
    storage's options and what it learns in training (code ranges, codebooks, rotation).

    Subclasses set OPTIONS (the IVFIndex keywords they take) and KEEPS_EXACT (whether
    each vector's exact float32 row is kept beside its codes for the re-scoring)."""

    OPTIONS: tuple = ()
    KEEPS_EXACT = False

    def __init__(self, dtype: str, dim: int, metric: str, seed: int):
        self.dtype, self.dim, self.metric, self.seed = dtype, dim, metric, seed
        # Names this storage's searches to the native per-thread report (ivf_last_report).
        self.owner = next(_OWNERS)

    @property
    def options(self) -> dict:
        """The option values, by keyword (what repr and the file record)."""
        return {}

    def repr_options(self) -> str:
        """What repr adds after the dtype."""
        return ""

    # ---- rows --------------------------------------------------------------

    def empty_rows(self) -> np.ndarray:
        """The stored rows of no vectors (their dtype and width)."""
        raise NotImplementedError

    def empty_lists(self, nlist: int) -> Lists:
        lists = Lists.empty(nlist, self.dim, np.float32, self.metric == "l2", self.KEEPS_EXACT)
        return replace(lists, rows=self.empty_rows())

    def fit(self, x: np.ndarray, n_threads: int):
        """What the storage learns from a prepared training sample (None: nothing); run
        before the k-means, so that a sample it refuses changes nothing."""
        return None

    def set_trained(self, fitted, centroids: np.ndarray) -> None:
        """Takes what fit (or a file) gave, with the index's new centroids."""

    def encode(self, x: np.ndarray, labels: np.ndarray, n_threads: int = 0) -> np.ndarray:
        """The stored rows of prepared float32 vectors that go to lists ``labels``."""
        raise NotImplementedError

    def decoded(self, rows: np.ndarray) -> np.ndarray:
        """The float32 values that stored rows stand for (storages without exact rows)."""
        raise NotImplementedError

    def attach(self, lists: Lists) -> Snapshot:
        """The snapshot that searches of these lists scan."""
        return Snapshot(lists)

    # ---- search ------------------------------------------------------------

    def checked_rescore(self, rescore):
        """The re-scoring argument of search, checked, as the native scan takes it."""
        return check_positive_int(DEFAULT_RESCORE if rescore is None else rescore, "rescore")

    def search(self, snapshot: Snapshot, coarse: Coarse, q: np.ndarray, k: int, nprobe: int,
               rescore, mask, by_row: bool, n_threads: int) -> Hits:
        """Hits made by the native scan, which keeps what it reports (stages, counts)
        for _core.ivf_last_report(self.owner)."""
        raise NotImplementedError

    # ---- sizes -------------------------------------------------------------

    def scanned_bytes(self) -> int:
        """Bytes scanned per vector."""
        raise NotImplementedError

    def kept_extra_bytes(self) -> int:
        """Bytes kept per vector beside the scanned ones (exact row, second code copy)."""
        return 4 * self.dim if self.KEEPS_EXACT else 0

    def memory_arrays(self, snapshot: Snapshot) -> list:
        """The arrays the storage holds beside the lists (trained state, derived blocks)."""
        return []

    # ---- files -------------------------------------------------------------

    @classmethod
    def options_from_file(cls, f: FileFields, dim: int) -> dict:
        """The options a file's params give, checked (IndexFileError naming the field)."""
        return {}

    def file_params(self) -> dict:
        return dict(self.options)

    def checked_rows(self, f: FileFields, n: int) -> np.ndarray:
        """A file's stored rows, checked against the options."""
        empty = self.empty_rows()
        return f.array("rows", empty.dtype, (n, empty.shape[1]))

    def trained_arrays(self) -> dict:
        """The arrays of what the storage learned (none before training)."""
        return {}

    def trained_from_file(self, f: FileFields):
        """What a trained index's file holds of what fit learns (set_trained takes it)."""
        return None
