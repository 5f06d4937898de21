"""The Collection: a directory with a SQLite database (documents, chunks, metadata,
embeddings; the source of truth) and the index files it keeps current.

    collection  the Collection class: the public API
    store       every SQL statement
    indexes     the dense and BM25 indexes kept beside the database
    manifest    indexes.json: which files hold the indexes, read only as it was written
    database_checks  at open: the schema and meta values are as ragcore wrote them
    filters     the metadata filter language, compiled to SQL and to allow-sets
    locking     one writer across processes, searches against writes inside one
    checks      the checks of create/open arguments and settings
    fingerprint what identifies the encoder that made the stored vectors
    allow_cache allow-sets of recent filters
"""

from .collection import Collection
from ...errors import (CollectionCorruptError, CollectionError, CollectionLockedError,
                       FilterError)

__all__ = ["Collection", "CollectionCorruptError", "CollectionError", "CollectionLockedError",
           "FilterError"]
