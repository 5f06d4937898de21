"""The load generator of bench/serve_load.py, run in a process of its own: N concurrent
clients, each one keep-alive HTTP/1.1 connection, POST request bodies to one endpoint in a
closed loop for a fixed time (after a warm-up that is not counted) or until a request
budget is spent; prints one JSON line: requests, errors (by status), QPS, latency p50 /
p90 / p99. The requests are prepared bytes and the responses are read with asyncio
streams on uvloop (Content-Length or chunked): a fraction of a general HTTP client's
cost, so the generator takes little of the cores the server is measured on.

    python bench/serve_loadgen.py ENDPOINT_URL BODIES.json --clients 32 --seconds 8 [--key KEY]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
import time
from urllib.parse import urlsplit

import numpy as np

_LENGTH = re.compile(rb"(?im)^content-length:\s*(\d+)")
_CHUNKED = re.compile(rb"(?im)^transfer-encoding:\s*chunked")


def requests(url: str, bodies: list, key: str | None) -> list:
    parts = urlsplit(url)
    path = parts.path or "/"
    auth = f"Authorization: Bearer {key}\r\n" if key else ""
    out = []
    for body in bodies:
        data = json.dumps(body).encode()
        out.append((f"POST {path} HTTP/1.1\r\nHost: {parts.netloc}\r\n{auth}"
                    f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n"
                    ).encode() + data)
    return out


async def _read_response(reader) -> int:
    head = await reader.readuntil(b"\r\n\r\n")
    status = int(head[9:12])
    m = _LENGTH.search(head)
    if m:
        await reader.readexactly(int(m.group(1)))
    elif _CHUNKED.search(head):
        while True:
            size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
            await reader.readexactly(size + 2)
            if size == 0:
                break
    return status


async def _client(host, port, reqs, offset, stop_at, warm_until, lat, statuses, budget):
    i = offset
    conn = None
    while time.perf_counter() < stop_at and budget[0] > 0:
        req = reqs[i % len(reqs)]
        i += 1
        t = time.perf_counter()
        try:
            if conn is None:
                conn = await asyncio.open_connection(host, port)
            conn[1].write(req)
            status = await _read_response(conn[0])
        except (OSError, asyncio.IncompleteReadError, ValueError) as err:
            status = type(err).__name__
            if conn is not None:
                conn[1].close()
            conn = None
        done = time.perf_counter()
        if t >= warm_until:
            budget[0] -= 1
            statuses[str(status)] = statuses.get(str(status), 0) + 1
            if status == 200:
                lat.append(done - t)
    if conn is not None:
        conn[1].close()


async def run(url, bodies, clients, seconds, warmup, key, max_requests):
    parts = urlsplit(url)
    reqs = requests(url, bodies, key)
    lat, statuses, budget = [], {}, [max_requests]
    start = time.perf_counter()
    warm_until = start + warmup
    stop_at = warm_until + seconds
    await asyncio.gather(*(_client(parts.hostname, parts.port, reqs, c * 7919, stop_at,
                                   warm_until, lat, statuses, budget)
                           for c in range(clients)))
    elapsed = min(time.perf_counter(), stop_at) - warm_until
    ok = statuses.get("200", 0)
    total = sum(statuses.values())
    lat_ms = np.array(lat) * 1e3
    return {"clients": clients, "requests": total, "ok": ok, "errors": total - ok,
            "statuses": statuses, "seconds": elapsed, "qps": ok / elapsed if elapsed else None,
            **{f"p{p}_ms": float(np.percentile(lat_ms, p)) if len(lat_ms) else None
               for p in (50, 90, 99)}}


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("url")
    p.add_argument("bodies", help="a JSON file: a list of request bodies, sent in turn")
    p.add_argument("--clients", type=int, default=32)
    p.add_argument("--seconds", type=float, default=8.0)
    p.add_argument("--warmup", type=float, default=1.5)
    p.add_argument("--max-requests", type=int, default=100_000)
    p.add_argument("--key", default=None)
    args = p.parse_args()
    with open(args.bodies) as f:
        bodies = json.load(f)
    try:
        import uvloop
        runner = uvloop.run
    except ImportError:
        runner = asyncio.run
    out = runner(run(args.url, bodies, args.clients, args.seconds, args.warmup, args.key,
                     args.max_requests))
    json.dump(out, sys.stdout)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
