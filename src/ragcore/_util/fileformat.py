"""The index file format shared by every index type.

Layout (little-endian):
  magic b"RAGCORE\\0" | format version u32 | header length u32 | header (JSON) |
  zero padding to 64 | arrays, each at a 64-byte aligned offset | CRC-32 of all
  bytes before it (u32) | b"RCND"

The header names the index kind, its parameters and each array's name, dtype,
shape and offset. Files are written to a temporary file in the same directory
and renamed, so a crash never leaves a half-written index under the real name.
"""

from __future__ import annotations

import json
import mmap as mmap_module
import math
import os
import stat
import struct
import tempfile
import zlib

import numpy as np

from ..errors import IndexFileError

MAGIC = b"RAGCORE\x00"
END_MAGIC = b"RCND"
FORMAT_VERSION = 1
_ALIGN = 64
_PREFIX = struct.Struct("<8sII")
_TRAILER = struct.Struct("<I4s")
_ALLOWED_DTYPES = ("float32", "float16", "uint16", "int64", "uint8", "int32", "uint32")
_CRC_CHUNK = 1 << 24


def _aligned(n: int) -> int:
    return (n + _ALIGN - 1) // _ALIGN * _ALIGN


def write_index(path, kind: str, params: dict, arrays: dict) -> None:
    """Writes arrays and params atomically to path."""
    specs, offset = [], 0
    for name, arr in arrays.items():
        arr = np.ascontiguousarray(arr)
        specs.append({"name": name, "dtype": arr.dtype.name, "shape": list(arr.shape),
                      "offset": offset, "nbytes": arr.nbytes})
        offset = _aligned(offset + arr.nbytes)
    header = json.dumps({"kind": kind, "params": params, "arrays": specs,
                         "payload_bytes": offset}).encode()
    head = _PREFIX.pack(MAGIC, FORMAT_VERSION, len(header)) + header
    head += b"\x00" * (_aligned(len(head)) - len(head))

    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".ragcore-", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            crc = _write(f, head, 0)
            for spec, arr in zip(specs, arrays.values()):
                data = np.ascontiguousarray(arr).reshape(-1).view(np.uint8)
                crc = _write(f, data, crc)
                pad = _aligned(spec["offset"] + spec["nbytes"]) - spec["offset"] - spec["nbytes"]
                crc = _write(f, b"\x00" * pad, crc)
            f.write(_TRAILER.pack(crc, END_MAGIC))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _write(f, data, crc: int) -> int:
    f.write(data)
    return zlib.crc32(data, crc)


def read_index(path, kind: str, mmap: bool = False) -> tuple[dict, dict]:
    """Reads and verifies a file written by write_index; returns (params, arrays).

    With mmap=True the arrays are read-only views of a private, read-only mapping of the
    file (the checksum is still verified, which reads the file once). A mapped file must
    not be truncated or rewritten in place while the index is in use: the operating
    system then raises SIGBUS on the next read of a vanished page, which no check can
    catch (save() never does that: it writes a new file and renames it).
    Only regular files are read: a FIFO, device or directory is refused without
    blocking on it.
    """
    path = os.fspath(path)
    try:  # O_NONBLOCK: opening a FIFO must not wait for a writer
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    except IsADirectoryError:
        raise IndexFileError(f"{path}: not a regular file (a directory)") from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise IndexFileError(f"{path}: not a regular file (a FIFO, device or directory)")
    with os.fdopen(fd, "rb") as f:
        size = info.st_size
        if size < _PREFIX.size + _TRAILER.size:
            raise IndexFileError(f"{path}: too short to be a ragcore index ({size} bytes)")
        if mmap:
            buf = _map_private(f.fileno())
        else:
            buf = bytearray(size)
            if f.readinto(buf) != size:
                raise IndexFileError(f"{path}: could not read the whole file")
    view = memoryview(buf)
    magic, version, header_len = _PREFIX.unpack_from(view, 0)
    if magic != MAGIC:
        raise IndexFileError(f"{path}: not a ragcore index file (bad magic bytes)")
    if version != FORMAT_VERSION:
        raise IndexFileError(
            f"{path}: index format version {version} is not supported "
            f"(this ragcore reads version {FORMAT_VERSION})"
        )
    header = _parse_header(view, header_len, size, path)
    payload_start = _aligned(_PREFIX.size + header_len)
    expected = payload_start + header["payload_bytes"] + _TRAILER.size
    if size != expected:
        raise IndexFileError(
            f"{path}: file is {size} bytes but its header describes {expected}; "
            "it is truncated or damaged"
        )
    crc_stored, end = _TRAILER.unpack_from(view, size - _TRAILER.size)
    if end != END_MAGIC or _crc(view[: size - _TRAILER.size]) != crc_stored:
        raise IndexFileError(f"{path}: checksum mismatch; the file is damaged")
    if header["kind"] != kind:
        raise IndexFileError(f"{path}: holds a {header['kind']}, not a {kind}")
    arrays = {}
    for spec in header["arrays"]:
        arr = np.frombuffer(buf, dtype=spec["dtype"], count=math.prod(spec["shape"]),
                            offset=payload_start + spec["offset"])
        arrays[spec["name"]] = arr.reshape(spec["shape"])
    return header["params"], arrays


def _map_private(fd: int):
    """A read-only, private (copy-on-write, never written) mapping of the whole file."""
    if hasattr(mmap_module, "MAP_PRIVATE"):
        return mmap_module.mmap(fd, 0, flags=mmap_module.MAP_PRIVATE, prot=mmap_module.PROT_READ)
    return mmap_module.mmap(fd, 0, access=mmap_module.ACCESS_READ)  # Windows: read-only


def _crc(view: memoryview) -> int:
    crc = 0
    for start in range(0, len(view), _CRC_CHUNK):
        crc = zlib.crc32(view[start : start + _CRC_CHUNK], crc)
    return crc


def _parse_header(view: memoryview, header_len: int, size: int, path: str) -> dict:
    if _PREFIX.size + header_len > size:
        raise IndexFileError(f"{path}: truncated header")
    try:
        header = json.loads(bytes(view[_PREFIX.size : _PREFIX.size + header_len]))
        _check_header(header)
    except (ValueError, KeyError, TypeError, UnicodeDecodeError, RecursionError) as err:
        raise IndexFileError(f"{path}: damaged header ({err})") from None
    return header


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _check_header(header) -> None:
    """Raises ValueError unless the header describes arrays that lie, aligned and without
    overlapping, inside the payload."""
    if not isinstance(header, dict):
        raise ValueError("not an object")
    if not isinstance(header.get("kind"), str) or not isinstance(header.get("params"), dict):
        raise ValueError("kind or params")
    payload = header.get("payload_bytes")
    if not _is_int(payload) or payload < 0:
        raise ValueError("payload_bytes")
    specs = header.get("arrays")
    if not isinstance(specs, list):
        raise ValueError("arrays is not a list")
    names, end = set(), 0
    for spec in sorted(specs, key=lambda s: s.get("offset", 0) if isinstance(s, dict) and
                       _is_int(s.get("offset")) else -1):
        if not isinstance(spec, dict) or not isinstance(spec.get("name"), str):
            raise ValueError("array entry without a name")
        name = spec["name"]
        if name in names:
            raise ValueError(f"array {name!r} appears twice")
        names.add(name)
        if spec.get("dtype") not in _ALLOWED_DTYPES:
            raise ValueError(f"array {name!r}: dtype {spec.get('dtype')!r}")
        shape, offset = spec.get("shape"), spec.get("offset")
        if not isinstance(shape, list) or not all(_is_int(s) and 0 <= s < 2**62 for s in shape) \
                or len(shape) > 2:
            raise ValueError(f"array {name!r}: shape {shape!r}")
        nbytes = math.prod(shape) * np.dtype(spec["dtype"]).itemsize
        if nbytes != spec.get("nbytes"):
            raise ValueError(f"array {name!r}: size")
        if not _is_int(offset) or offset % _ALIGN or offset < end or offset + nbytes > payload:
            raise ValueError(f"array {name!r}: offset")
        end = offset + nbytes
