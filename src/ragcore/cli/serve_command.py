"""``ragcore serve PATH``: a Collection (or a ShardedCollection) behind the HTTP API of
ragcore.serve, on Ray Serve."""

from __future__ import annotations

import os
import signal
import sys
import threading


def add_arguments(sub) -> None:
    p = sub.add_parser("serve", help="serve a collection over HTTP (JSON) on Ray Serve; "
                                     "concurrent queries are searched in batches")
    p.add_argument("path", help="the directory of a Collection or of a ShardedCollection")
    p.add_argument("--host", default="127.0.0.1",
                   help="address to bind (default 127.0.0.1: this machine only)")
    p.add_argument("--port", type=int, default=8000, help="default 8000")
    p.add_argument("--replicas", type=int, default=1, help="reader replicas (default 1)")
    p.add_argument("--max-batch", type=int, default=64,
                   help="most queries searched in one batch (default 64; 1: no batching)")
    p.add_argument("--batch-wait-ms", type=float, default=2.0,
                   help="how long a batch's first query waits for others, when the last "
                        "batch held more than one request (default 2)")
    p.add_argument("--api-key-env", default=None, metavar="NAME",
                   help="the environment variable holding the API key; every route but "
                        "/health then needs it")
    p.add_argument("--address", default=None, metavar="RAY",
                   help="a running Ray cluster to join (default: start one here)")
    p.add_argument("--ingress", choices=("proxy", "haproxy"), default="proxy",
                   help="proxy (default): Ray Serve's HTTP proxy, bound to --host only; "
                        "haproxy: HAProxy forwards to each replica's own HTTP server (one "
                        "hop, faster), but also opens HAProxy's statistics page and metrics "
                        "exporter on every interface")
    p.add_argument("--num-cpus", type=int, default=None,
                   help="CPUs of the Ray started here (default: all)")


def run(args) -> int:
    from .. import errors
    from ..serve.deployments import start

    api_key = None
    if args.api_key_env is not None:
        api_key = os.environ.get(args.api_key_env)
        if not api_key:
            print(f"ragcore serve: --api-key-env {args.api_key_env}: that environment variable "
                  "is not set or empty", file=sys.stderr)
            return 2
    try:
        start(args.path, host=args.host, port=args.port, replicas=args.replicas,
              max_batch=args.max_batch, batch_wait_ms=args.batch_wait_ms, api_key=api_key,
              address=args.address, num_cpus=args.num_cpus, ingress=args.ingress)
    except (errors.CollectionError, ValueError, errors.HaproxyNotFoundError) as err:
        print(f"ragcore serve: {err}", file=sys.stderr)
        return 2
    print(f"ragcore serve: {args.path} on http://{args.host}:{args.port} (OpenAPI schema at "
          "/openapi.json); Ctrl-C stops", file=sys.stderr, flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        stop.wait()
    except KeyboardInterrupt:
        pass
    from ray import serve

    serve.shutdown()
    return 0
