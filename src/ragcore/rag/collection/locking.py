"""The locks of a Collection: one writer per collection across processes (a file lock), and
searches against writes inside one process (a readers-writer lock)."""

from __future__ import annotations

import fcntl
import os
import threading
import weakref

from ...errors import CollectionLockedError


class WriterLock:
    """An exclusive flock on PATH/writer.lock, held while a collection is open for writing.

    flock locks belong to an open file, so a second writer in the same process is refused
    too, and the kernel drops the lock when the process dies (even by SIGKILL). A lock that
    is garbage-collected unreleased (its collection dropped without close()) releases
    itself, so the collection can be opened again in the same process."""

    def __init__(self, path: str):
        fd = os.open(os.path.join(path, "writer.lock"), os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise CollectionLockedError(
                f"{path}: another writer has this collection open; close it first, or open "
                "this one with readonly=True") from None
        # The finalizer holds the fd only, not self, so it does not keep the lock alive; at
        # exit the kernel drops the lock anyway.
        self._finalizer = weakref.finalize(self, _unlock, fd, os.getpid())
        self._finalizer.atexit = False

    def release(self) -> None:
        self._finalizer()  # runs _unlock once; later calls do nothing


def _unlock(fd: int, owner: int) -> None:
    # A forked child shares the open file and so the lock: only the process that took it
    # unlocks it (for everyone); a child just closes its copy of the fd.
    if os.getpid() == owner:
        fcntl.flock(fd, fcntl.LOCK_UN)
    os.close(fd)


class ReadWriteLock:
    """Many searches at once, or one change to the in-memory indexes (a waiting change goes
    before new searches, so a stream of searches cannot starve it)."""

    def __init__(self):
        self._cond = threading.Condition()
        self._readers = 0
        self._writer = False
        self._waiting_writers = 0

    def read(self):
        return _Held(self, False)

    def write(self):
        return _Held(self, True)

    def _acquire(self, write: bool) -> None:
        with self._cond:
            if write:
                self._waiting_writers += 1
                while self._writer or self._readers:
                    self._cond.wait()
                self._waiting_writers -= 1
                self._writer = True
            else:
                while self._writer or self._waiting_writers:
                    self._cond.wait()
                self._readers += 1

    def _release(self, write: bool) -> None:
        with self._cond:
            if write:
                self._writer = False
            else:
                self._readers -= 1
            self._cond.notify_all()


class _Held:
    def __init__(self, lock: ReadWriteLock, write: bool):
        self._lock, self._write = lock, write

    def __enter__(self):
        self._lock._acquire(self._write)
        return self

    def __exit__(self, *exc):
        self._lock._release(self._write)
        return False
