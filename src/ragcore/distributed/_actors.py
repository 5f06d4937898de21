"""Starting the shard actors and collecting their answers, naming the shard that failed."""

from __future__ import annotations

import numpy as np

from ..errors import ShardError
from ._host import ShardHost


def actor_options_per_shard(num_cpus, actor_options, n_shards: int) -> list[dict]:
    """The ray.remote options of each shard's actor, checked before anything starts."""
    if isinstance(num_cpus, bool) or not isinstance(num_cpus, (int, float, np.integer,
                                                              np.floating)) or not num_cpus >= 0:
        raise ValueError(f"num_cpus must be a number >= 0, got {num_cpus!r}")
    if actor_options is None:
        options = [{} for _ in range(n_shards)]
    elif isinstance(actor_options, dict):
        options = [actor_options] * n_shards
    else:
        options = list(actor_options)
        if len(options) != n_shards or not all(isinstance(o, dict) for o in options):
            raise ValueError(f"actor_options must be a dict or a list of {n_shards} dicts, "
                             "one per shard")
    if any("num_cpus" in o for o in options):
        raise ValueError("actor_options: pass num_cpus as its own argument")
    return [{**o, "num_cpus": float(num_cpus)} for o in options]


def start_actors(ray, options: list[dict], timeout: float) -> list:
    """One ShardHost actor per options dict, once Ray has placed them all."""
    n_shards, num_cpus = len(options), options[0]["num_cpus"]
    remote = ray.remote(ShardHost)
    n_threads = max(1, int(num_cpus))
    actors = [remote.options(**opts).remote(n_threads) for opts in options]
    try:
        ray.get([a.ready.remote() for a in actors], timeout=timeout)
    except ray.exceptions.GetTimeoutError:
        for actor in actors:
            ray.kill(actor)
        cpus = ray.cluster_resources().get("CPU", 0)
        raise RuntimeError(
            f"the {n_shards} shard actors were not all placed within {timeout:g} s: they ask "
            f"for num_cpus={num_cpus:g} each and the cluster has {cpus:g} CPUs in all; lower "
            "num_cpus, use fewer shards or add nodes") from None
    except BaseException:
        for actor in actors:
            ray.kill(actor)
        raise
    return actors


def gather(ray, refs, what: str, shards=None) -> list:
    """ray.get of each shard's call (all already running), naming the first shard that failed.

    Every ref is read even after a failure, so Ray does not log the other errors as
    unhandled."""
    shards = range(len(refs)) if shards is None else shards
    out, failure = [], None
    for shard, ref in zip(shards, refs):
        try:
            out.append(ray.get(ref))
        except ray.exceptions.RayTaskError as err:
            cause = getattr(err, "cause", None) or err
            failure = failure or ShardError(
                f"shard {shard} failed in {what}: {type(cause).__name__}: {_summary(cause)}",
                shard, cause)
        except ray.exceptions.RayActorError as err:
            failure = failure or ShardError(
                f"shard {shard} is gone (its actor died) during {what}: {_summary(err)}",
                shard, err)
    if failure is not None:
        raise failure from failure.cause
    return out


def _summary(err) -> str:
    """The last line of an error's text: for Ray's errors, the original message."""
    text = str(err).strip()
    return text.splitlines()[-1] if text else repr(err)
