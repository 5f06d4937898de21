"""The Collection behind an adapter's vector store: the one at a path (opened, or created),
or one in a temporary directory that the store owns and removes."""

from __future__ import annotations

import os
import shutil
import tempfile
import weakref

from ..collection import Collection
from ..collection.store import DB_NAME


class ClosesCollection:
    """close() and the with-statement of an adapter's store, which sets _discard (the
    Collection's close, or the temporary collection's removal)."""

    def close(self) -> None:
        """Closes the Collection (writes its index files, releases its writer lock); a
        temporary collection's directory is removed. Closing again does nothing."""
        self._discard()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> bool:
        self.close()
        return False


def open_or_create(path, encoder, options: dict) -> Collection:
    """The collection at path: opened if the directory holds one, else created with options."""
    if os.path.isfile(os.path.join(os.fspath(path), DB_NAME)):
        return Collection.open(path, encoder=encoder)
    return Collection.create(path, encoder=encoder, **options)


def temporary(owner, encoder, options: dict, prefix: str):
    """A new collection in a new temporary directory, and a function that closes it and
    removes the directory. The function runs once: when called (by the owner's close()),
    when owner is garbage-collected, or at interpreter exit, whichever comes first."""
    directory = tempfile.mkdtemp(prefix=prefix)
    try:
        collection = Collection.create(directory, encoder=encoder, **options)
    except BaseException:
        shutil.rmtree(directory, ignore_errors=True)
        raise
    return collection, weakref.finalize(owner, _discard, collection, directory)


def _discard(collection: Collection, directory: str) -> None:
    try:
        collection.close()
    finally:
        shutil.rmtree(directory, ignore_errors=True)
