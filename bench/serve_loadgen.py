"""The load generator of bench/serve_load.py, run in a process of its own: N concurrent
clients (asyncio + aiohttp, one keep-alive connection each) POST request bodies to one
endpoint in a closed loop for a fixed time (after a warm-up that is not counted) or until a request budget is
spent; prints one JSON line: requests, errors (by status), QPS, latency p50 / p90 / p99.

    python bench/serve_loadgen.py ENDPOINT_URL BODIES.json --clients 32 --seconds 8 [--key KEY]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time

import numpy as np


async def _client(session, url, bodies, offset, stop_at, warm_until, lat, statuses, budget):
    i = offset
    while time.perf_counter() < stop_at and budget[0] > 0:
        body = bodies[i % len(bodies)]
        i += 1
        t = time.perf_counter()
        try:
            async with session.post(url, data=body) as reply:
                await reply.read()
                status = reply.status
        except Exception as err:  # noqa: BLE001 (counted as an error)
            status = type(err).__name__
        done = time.perf_counter()
        if t >= warm_until:
            budget[0] -= 1
            statuses[str(status)] = statuses.get(str(status), 0) + 1
            if status == 200:
                lat.append(done - t)


async def run(url, bodies, clients, seconds, warmup, key, max_requests):
    import aiohttp

    headers = {"content-type": "application/json"}
    if key:
        headers["authorization"] = f"Bearer {key}"
    bodies = [json.dumps(b).encode() for b in bodies]
    connector = aiohttp.TCPConnector(limit=clients, force_close=False)
    lat, statuses, budget = [], {}, [max_requests]
    async with aiohttp.ClientSession(connector=connector, headers=headers,
                                     timeout=aiohttp.ClientTimeout(total=60)) as session:
        start = time.perf_counter()
        warm_until = start + warmup
        stop_at = warm_until + seconds
        await asyncio.gather(*(_client(session, url, bodies, c * 7919, stop_at,
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
    p.add_argument("--max-requests", type=int, default=50_000)
    p.add_argument("--key", default=None)
    args = p.parse_args()
    with open(args.bodies) as f:
        bodies = json.load(f)
    out = asyncio.run(run(args.url, bodies, args.clients, args.seconds, args.warmup, args.key,
                          args.max_requests))
    json.dump(out, sys.stdout)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
