"""Importing Ray lazily, with the install hint when it is missing."""

from __future__ import annotations


def require_ray():
    """The ray module; ImportError naming the extra to install when it is missing."""
    try:
        import ray
    except ImportError:
        raise ImportError(
            "ragcore.distributed needs Ray, which is not installed: "
            "pip install 'ray>=2.9' (the dist extra)"
        ) from None
    return ray


def connect(address):
    """ray, initialised: joins `address` (or starts a local Ray) only if no Ray is running
    in this process; a running one is the user's and is used as it is."""
    ray = require_ray()
    if ray.is_initialized():
        if address is not None:
            raise ValueError(
                f"address={address!r}: Ray is already initialised in this process; "
                "leave address=None to use that cluster, or call ray.shutdown() first"
            )
        return ray
    ray.init(address=address)
    return ray
