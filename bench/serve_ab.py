"""Batching on against off, in turns: ``ragcore serve`` (the command, as a user starts
it) restarted for each turn with --max-batch 64 or 1, the same load each time, so that
the shared machine's drift falls on both sides alike.

    .venv/bin/python bench/serve_ab.py [--rounds 2] [--clients 32] [--seconds 8]
                                       [--ingress haproxy [proxy]] [--workload vector]
                                       [--baseline OTHER/src] [--out bench/results/]

--baseline: the src/ folder of another checkout (its native module built beside it, e.g.
the main branch before a change), served in the same rounds as this one: each round runs
off and on of the baseline and of this code, so both pairs see the same machine.

Collection and queries: bench/serve_load.py's (10,000 chunks; "vector": dense search of
precomputed query embeddings, "text": hybrid search of the question, encoded by the
server). Load: bench/serve_loadgen.py, a 1.5 s warm-up, then --seconds measured.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import builds
from results_file import table, write_section
from serve_load import PEERS, SRC, build_collection, corpus, free_port, load, wait_healthy


def one_turn(path, max_batch, ingress, bodies, clients, seconds, tmp, src=SRC,
             tries: int = 3) -> dict:
    """One turn's load; a server that does not come up (Ray's start can fail on a busy
    machine) is started again, up to `tries` times."""
    for attempt in range(tries):
        try:
            return _turn(path, max_batch, ingress, bodies, clients, seconds, tmp, src)
        except RuntimeError as err:
            if attempt == tries - 1:
                raise
            print(f"retrying the turn: {err}", file=sys.stderr, flush=True)


def _turn(path, max_batch, ingress, bodies, clients, seconds, tmp, src) -> dict:
    port = free_port()
    env = builds.environment(src)
    server = subprocess.Popen([sys.executable, "-m", "ragcore", "serve", path, "--port", str(port),
                               "--num-cpus", "2", "--max-batch", str(max_batch),
                               "--ingress", ingress], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.time() + 240
        while True:
            if server.poll() is not None:
                raise RuntimeError(f"ragcore serve exited ({server.returncode})")
            try:
                wait_healthy(url, timeout=2)
                break
            except RuntimeError:
                if time.time() > deadline:
                    raise
        time.sleep(2)
        row = load(url + "/search", bodies, clients, seconds, tmp)
    finally:
        server.terminate()
        server.wait(120)
    return {**row, "max_batch": max_batch, "batching": "on" if max_batch > 1 else "off"}


COLUMNS = [{"key": "round", "label": "round"}, {"key": "code", "label": "code"},
           {"key": "batching", "label": "batching"},
           {"key": "qps", "label": "QPS", "format": ",.0f"},
           {"key": "p50_ms", "label": "p50 ms", "format": ".1f"},
           {"key": "p99_ms", "label": "p99 ms", "format": ".1f"},
           {"key": "errors", "label": "errors"}]


def ratio(rows: list) -> float:
    """QPS on / off: the means of the turns."""
    on = [r["qps"] for r in rows if r["batching"] == "on"]
    off = [r["qps"] for r in rows if r["batching"] == "off"]
    return float(np.mean(on) / np.mean(off))


def write_results(rows: list, args, command: str, note: str | None = None,
                  out_dir: Path | None = None) -> Path:
    """bench/results/serve_ab.json in the results schema (bench/README.md): a table per
    ingress; the ratio of each code (this, and the baseline if one ran)."""
    tables, ratios = [], {}
    for ingress in args.ingress:
        mine = [r for r in rows if r["ingress"] == ingress]
        codes = list(dict.fromkeys(r["code"] for r in mine))
        found = {c: ratio([r for r in mine if r["code"] == c]) for c in codes}
        ratios[ingress] = found
        p99 = {c: max(r["p99_ms"] for r in mine if r["code"] == c and r["batching"] == "on")
               for c in codes}
        summary = [f"{c}: QPS on / off (means of the turns) {found[c]:.2f}; batching on, "
                   f"worst p99 of the turns {p99[c]:.1f} ms" for c in codes]
        title = (f"{args.clients} clients, {args.workload} queries, {ingress} ingress, "
                 f"{args.seconds:g} s per turn")
        tables.append(table(title, COLUMNS, mine, summary + ([note] if note else [])))
    return write_section(
        "serve_ab", "ragcore serve: batching on against off, in turns", command,
        tables=tables, threads=os.cpu_count(), order=86, peers=PEERS,
        intro=("The serve command restarted for each turn, --max-batch 64 (on) or 1 (off), the "
               "same load each time (bench/serve_loadgen.py), turns alternating so that the "
               "shared machine's drift falls on both alike. code: this: the commit named "
               "below; baseline: the code it is compared with (--baseline), in the same "
               "rounds."),
        extra={"qps_ratio_on_over_off": ratios}, out_dir=out_dir)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--clients", type=int, default=32)
    p.add_argument("--seconds", type=float, default=8.0)
    p.add_argument("--ingress", default=["haproxy"], nargs="+", choices=("haproxy", "proxy"))
    p.add_argument("--workload", default="vector", choices=("vector", "text"))
    p.add_argument("--baseline", default=None, type=Path,
                   help="another checkout's src/ folder, served in the same rounds")
    p.add_argument("--baseline-name", default="baseline",
                   help="what the tables call the baseline (e.g. its commit)")
    p.add_argument("--note", default=None, help="a line under each table (e.g. the load)")
    p.add_argument("--out", default=None, help="a folder for serve_ab.json (default bench/results)")
    args = p.parse_args()
    from ragcore.cli.datasets import stdlib_docs
    from ragcore.encoders import default_encoder

    texts, vectors = corpus(10_000)
    questions = list(stdlib_docs().questions)
    if args.workload == "vector":
        qvecs = default_encoder().encode(questions[:400])
        bodies = [{"query": "", "vector": v.tolist(), "mode": "dense", "k": 10} for v in qvecs]
    else:
        bodies = [{"query": q, "k": 10} for q in questions]
    tmp = tempfile.mkdtemp(prefix="serve-ab-")
    rows = []
    try:
        path = os.path.join(tmp, "collection")
        build_collection(path, texts, vectors)
        codes = [("this", SRC)] + ([(args.baseline_name, args.baseline.resolve())]
                                   if args.baseline is not None else [])
        for ingress in args.ingress:
            for r, code, src in builds.in_turns(codes, args.rounds):
                for max_batch in (1, 64):
                    row = one_turn(path, max_batch, ingress, bodies, args.clients,
                                   args.seconds, tmp, src)
                    row.update(round=r, code=code, ingress=ingress)
                    rows.append(row)
                    print(json.dumps(row), file=sys.stderr, flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    path = write_results(rows, args, " ".join(["python", *sys.argv]), args.note,
                         None if args.out is None else Path(args.out))
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
