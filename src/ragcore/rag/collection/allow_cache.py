"""The allow-sets of recent filters, kept per database change number.

A RAG service tends to repeat a few filters (a tenant, a language, a date range); SQLite
evaluating one over every document costs far more than the scan it narrows, so the chunk
ids a filter allowed are kept until the collection changes (any write bumps the change
number, which is part of the key), least recently used out first.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict

import numpy as np

_MAX_IDS = 1 << 24  # chunk ids kept in all (128 MB of int64)


class AllowCache:
    def __init__(self, max_ids: int = _MAX_IDS):
        self._max_ids = max_ids
        self._entries: OrderedDict = OrderedDict()
        self._ids = 0
        self._lock = threading.Lock()

    @staticmethod
    def key(flt, change: int):
        """A key for a filter (None if it cannot be written as JSON: then it is not cached)."""
        try:
            return change, json.dumps(flt, sort_keys=True)
        except (TypeError, ValueError):
            return None

    def get(self, key):
        if key is None:
            return None
        with self._lock:
            hit = self._entries.get(key)
            if hit is not None:
                self._entries.move_to_end(key)
            return hit

    def put(self, key, allow: np.ndarray) -> None:
        if key is None or len(allow) > self._max_ids:
            return
        allow.setflags(write=False)
        with self._lock:
            if key in self._entries:
                return
            self._entries[key] = allow
            self._ids += len(allow)
            while self._ids > self._max_ids or (self._entries and
                                                next(iter(self._entries))[0] != key[0]):
                _, old = self._entries.popitem(last=False)
                self._ids -= len(old)
