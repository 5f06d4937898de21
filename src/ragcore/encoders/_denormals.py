"""Subnormal floats flushed to zero on the calling thread around CPU model runs.

The masked softmax of attention computes exp of scores shifted by the -10000
mask; onnxruntime's kernel meets subnormal floats on the way (its outputs there
are 0, yet it runs several times slower per element than unmasked), and every
subnormal operand or result costs the core a microcode assist. With the
thread's flush bits set (x86: MXCSR FTZ and DAZ; aarch64: FPCR.FZ) subnormals
become signed zeros at full speed: padded calls by count run faster per
CPU-second.
The bits are per thread, so each thread that calls a session sets its own, and
puts back what it had afterwards; onnxruntime's own pool threads get theirs from
the session option ``session.set_denormal_as_zero``.

onnxruntime also sets the flush state of the thread that creates the process's
first session, once, from that session's option (on or off) and never puts it
back; ragcore creates its sessions inside thread_state_kept() so that loading a
model leaves the caller's arithmetic as it was.

RAGCORE_KEEP_DENORMALS=1 (read when a model is loaded) keeps IEEE subnormals.
"""

from __future__ import annotations

import os
from contextlib import contextmanager

from .. import _core

KEEP_DENORMALS_ENV = "RAGCORE_KEEP_DENORMALS"


def keep_denormals() -> bool:
    """Whether the environment asks for IEEE subnormals (RAGCORE_KEEP_DENORMALS set
    to anything but "" or "0")."""
    return os.environ.get(KEEP_DENORMALS_ENV, "").strip() not in ("", "0")


def flush_supported() -> bool:
    """Whether this build can flush on this processor (x86-64, aarch64)."""
    return _core.denormal_flush_supported()


def denormals_flushed() -> bool:
    """Whether the calling thread flushes subnormals now."""
    return _core.denormals_flushed()


@contextmanager
def flushed_denormals():
    """Within the block, the calling thread flushes subnormal floats to signed zero
    (operands and results); on leaving it, also by an exception, the thread's
    previous state is back. Other threads are not affected. A no-op where
    flush_supported() is False."""
    previous = _core.set_denormal_flush(True)
    try:
        yield
    finally:
        _core.restore_denormal_state(previous)


@contextmanager
def thread_state_kept():
    """Whatever the block does to the calling thread's flush state is undone on
    leaving it (onnxruntime's session creation may set or clear it: see above)."""
    previous = _core.set_denormal_flush(_core.denormals_flushed())
    try:
        yield
    finally:
        _core.restore_denormal_state(previous)
