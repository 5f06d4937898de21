"""The manifest of a ShardedCollection: its shards, their replicas and their directories."""

from __future__ import annotations

import json
import os

from ..errors import CollectionError

MANIFEST = "sharded-collection.json"
KIND = "ragcore.ShardedCollection"
FORMAT_VERSION = 1


def replica_dir(shard: int, replica: int) -> str:
    """A replica's directory, relative to the sharded collection's."""
    return os.path.join(f"shard-{shard:05d}", f"replica-{replica}")


def write(path: str, n_shards: int, replicas: int, options: dict) -> dict:
    manifest = {"kind": KIND, "format_version": FORMAT_VERSION, "n_shards": n_shards,
                "replicas": replicas, "options": options,
                "shards": [[replica_dir(s, r) for r in range(replicas)] for s in range(n_shards)]}
    tmp = os.path.join(path, MANIFEST + ".tmp")
    with open(tmp, "w") as f:
        json.dump(manifest, f, indent=1)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, os.path.join(path, MANIFEST))
    return manifest


def present(path) -> bool:
    """True when path holds a ShardedCollection; its manifest is then read and checked
    (a damaged or foreign one is a CollectionError)."""
    path = os.fspath(path)
    if not os.path.isfile(os.path.join(path, MANIFEST)):
        return False
    read(path)
    return True


def read_json(file: str):
    """A JSON file of the sharded collection's directory; a CollectionError naming it when it
    cannot be read or parsed."""
    try:
        with open(file) as f:
            return json.load(f)
    except (OSError, ValueError) as err:
        raise CollectionError(f"{file}: unreadable: {err}") from None


def read(path: str) -> dict:
    file = os.path.join(path, MANIFEST)
    if not os.path.isfile(file):
        raise CollectionError(f"{path}: not a sharded collection (no {MANIFEST}); create it "
                              "with ShardedCollection.create")
    manifest = read_json(file)
    if not isinstance(manifest, dict) or manifest.get("kind") != KIND:
        raise CollectionError(f"{file}: not a ShardedCollection manifest")
    if manifest.get("format_version", 0) > FORMAT_VERSION:
        raise CollectionError(f"{file}: written by a newer ragcore; upgrade ragcore")
    shards = manifest.get("shards")
    if not isinstance(shards, list) or len(shards) != manifest.get("n_shards") or \
            any(not isinstance(r, list) or len(r) != manifest.get("replicas") for r in shards):
        raise CollectionError(f"{file}: the shard list does not match n_shards and replicas")
    return manifest
