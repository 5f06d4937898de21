"""Reads a .safetensors file into numpy arrays, without torch or the safetensors package.

The format (https://huggingface.co/docs/safetensors): an 8-byte little-endian header
length, a JSON header naming each tensor's dtype, shape and byte range, then the
raw little-endian data. Every length, range and shape read from the file is checked
before use, so a truncated or edited file raises ValueError instead of giving
wrong weights.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np

DTYPES = {"F32": np.dtype("<f4"), "F16": np.dtype("<f2"), "F64": np.dtype("<f8"),
          "I64": np.dtype("<i8"), "I32": np.dtype("<i4"), "I8": np.dtype("i1"),
          "U8": np.dtype("u1")}
MAX_HEADER = 100 << 20  # the format's own limit on the JSON header


def read_safetensors(path) -> dict[str, np.ndarray]:
    """{tensor name: array} of a safetensors file (arrays are read-only views of
    one in-memory copy of the file)."""
    path = Path(path)
    data = path.read_bytes()
    if len(data) < 8:
        raise ValueError(f"{path}: {len(data)} bytes, too short for a safetensors header")
    (header_len,) = struct.unpack("<Q", data[:8])
    if header_len > min(MAX_HEADER, len(data) - 8):
        raise ValueError(f"{path}: header length {header_len} exceeds the file "
                         f"({len(data)} bytes) or the format's limit")
    try:
        header = json.loads(data[8:8 + header_len])
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ValueError(f"{path}: the safetensors header is not JSON ({err})") from None
    if not isinstance(header, dict):
        raise ValueError(f"{path}: the safetensors header is not a JSON object")
    body = memoryview(data)[8 + header_len:]
    out = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        out[name] = _tensor(path, name, entry, body)
    return out


def _tensor(path: Path, name: str, entry, body: memoryview) -> np.ndarray:
    if not isinstance(entry, dict) or entry.get("dtype") not in DTYPES:
        raise ValueError(f"{path}: tensor {name!r} has dtype {entry.get('dtype') if isinstance(entry, dict) else entry!r}; "
                         f"expected one of {', '.join(DTYPES)}")
    dtype = DTYPES[entry["dtype"]]
    shape, offsets = entry.get("shape"), entry.get("data_offsets")
    if (not isinstance(shape, list) or not all(isinstance(d, int) and d >= 0 for d in shape)
            or not isinstance(offsets, list) or len(offsets) != 2
            or not all(isinstance(o, int) for o in offsets)):
        raise ValueError(f"{path}: tensor {name!r} has a malformed shape or data_offsets")
    begin, end = offsets
    expected = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if not 0 <= begin <= end <= len(body) or end - begin != expected:
        raise ValueError(f"{path}: tensor {name!r} spans bytes {begin}..{end} of {len(body)}; "
                         f"its shape {shape} needs {expected}")
    return np.frombuffer(body[begin:end], dtype=dtype).reshape(shape)
