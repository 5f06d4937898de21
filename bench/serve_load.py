"""``ragcore serve`` under load on loopback: QPS and latency of concurrent single-query
clients with batching on and off, and Chroma's own server (``chroma run``) on the same
documents and embeddings, in one run.

    .venv/bin/python bench/serve_load.py [--clients 1 8 32 128] [--seconds 5]
                                         [--out bench/results/serve.json]

Collection: 10,000 chunks of the standard-library documentation (ragcore.cli.datasets
stdlib_docs cut into chunks of at most 128 tokens, repeated until 10,000, each repeat's text
numbered and its vector given Gaussian noise of sigma 0.01, renormalised, so none tie;
embedded once with the bundled all-MiniLM-L6-v2, cached in the ragcore cache; flat dense index, BM25), chunker
"none". Queries: the corpus's questions, cycled; k = 10.
Server: Ray (num_cpus 2) and Ray Serve on 127.0.0.1, one reader replica (the ingress,
batching with @serve.batch) and the writer; batching on: --max-batch 64, --batch-wait-ms
2; off: --max-batch 1 (one request at a time). Workloads: "text" (hybrid search, the
server encodes the query) and "vector" (dense search of a precomputed query embedding,
what Chroma's server is given too). Load: bench/serve_loadgen.py (asyncio streams, prepared requests) in a process of its
own, N clients each with one keep-alive connection in a closed loop, a 1.5 s warm-up,
then --seconds measured. Before the load: where one request's time goes (sequential
requests: the proxy and ingress alone (/health), vector search, text search, and the
Collection's own stage timings in this process).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from results_file import table, write_section

HERE = Path(__file__).resolve().parent
# The directory holding the ragcore package this process would import (src/ in a built
# checkout, site-packages once installed): the servers it starts run the same one.
SRC = Path(importlib.util.find_spec("ragcore").origin).resolve().parents[1]
_ADD_BATCH = 5000


def corpus(n: int, seed: int = 0):
    """(texts, float32 vectors [n, dim]) as described in the docstring."""
    from ragcore.cli.datasets import stdlib_docs
    from ragcore.cli.embedding_cache import EmbeddingCache
    from ragcore.encoders.models import cache_dir
    from ragcore.encoders import default_encoder
    from ragcore.rag.chunking import Chunker

    encoder = default_encoder()
    chunker = Chunker(encoder, chunk_size=128, overlap=16)
    data = stdlib_docs()
    chunks = [c.text for c in chunker.chunk_documents((d.doc_id, d.text) for d in data.documents)]
    # A cache of this script's own: a shared one is rewritten by whatever else encodes.
    cache = EmbeddingCache(encoder, directory=cache_dir() / "serve-bench-embeddings",
                           show_progress=True)
    base = cache.encode(chunks)
    reps = -(-n // len(chunks))
    texts = [f"{t} [{i}]" for i, t in enumerate(t for _ in range(reps) for t in chunks)][:n]
    vectors = np.tile(base, (reps, 1))[:n]
    noise = np.random.default_rng(seed).normal(0.0, 0.01, size=vectors.shape)
    noise[: len(chunks)] = 0.0
    vectors = vectors + noise.astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return texts, np.ascontiguousarray(vectors, dtype=np.float32)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_healthy(url: str, timeout: float = 120.0) -> None:
    import httpx

    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            if httpx.get(url + "/health", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    raise RuntimeError(f"{url} did not answer /health within {timeout} s")


def build_collection(path, texts, vectors) -> None:
    from ragcore.rag.collection import Collection

    with Collection.create(path, chunker="none") as col:
        for s in range(0, len(texts), _ADD_BATCH):
            col.add(texts[s:s + _ADD_BATCH], ids=list(range(s, min(s + _ADD_BATCH, len(texts)))),
                    embeddings=vectors[s:s + _ADD_BATCH])


def load(endpoint, bodies, clients, seconds, tmp, key=None) -> dict:
    bodies_file = os.path.join(tmp, "bodies.json")
    with open(bodies_file, "w") as f:
        json.dump(bodies, f)
    cmd = [sys.executable, str(HERE / "serve_loadgen.py"), endpoint, bodies_file,
           "--clients", str(clients), "--seconds", str(seconds)]
    if key:
        cmd += ["--key", key]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + 120)
    if out.returncode:
        raise RuntimeError(f"load generator failed: {out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def median_ms(fn, n: int) -> float:
    times = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return float(np.median(times) * 1e3)


def http_breakdown(url, questions, qvecs, n: int = 40) -> dict:
    """Where one request's time goes, over HTTP: sequential requests (medians)."""
    import httpx

    out = {}
    with httpx.Client(base_url=url) as http:
        out["http_health_ms"] = median_ms(lambda: http.get("/health"), n)
        i = iter(range(10**9))
        out["http_vector_dense_ms"] = median_ms(lambda: http.post("/search", json={
            "query": "", "vector": qvecs[next(i) % len(qvecs)].tolist(), "mode": "dense"}), n)
        out["http_text_sparse_ms"] = median_ms(lambda: http.post("/search", json={
            "query": questions[next(i) % len(questions)], "mode": "sparse"}), n)
        out["http_text_hybrid_ms"] = median_ms(lambda: http.post("/search", json={
            "query": questions[next(i) % len(questions)]}), n)
    return out


def stage_breakdown(path, questions, n: int = 40) -> dict:
    """The Collection's stage timings (medians, ms) for one query and, per query, for a
    batch of 32, in this process."""
    from ragcore.rag.collection import Collection

    out = {}
    col = Collection.open(path, readonly=True)
    try:
        col.search(questions[0])
        stages = []
        for q in questions[:n]:
            t = time.perf_counter()
            r = col.search(q)
            stages.append({**r.timings, "total": time.perf_counter() - t})
        out["inprocess_one_query_ms"] = {s: float(np.median([x[s] for x in stages]) * 1e3)
                                         for s in stages[0]}
        batches = []
        for b in range(5):
            qs = questions[b * 32:(b + 1) * 32]
            t = time.perf_counter()
            r = col.search(qs)
            batches.append({**r[0].timings, "total": time.perf_counter() - t})
        out["inprocess_batch32_per_query_ms"] = {
            s: float(np.median([x[s] for x in batches]) * 1e3 / 32) for s in batches[0]}
    finally:
        col.close()
    return out


def run_ragcore_process(ingress, path, clients_list, seconds, tmp, workloads) -> tuple:
    """run_ragcore in a process of its own (Ray Serve reads its ingress settings from the
    environment when first imported): (http breakdown, rows)."""
    from ragcore.serve.deployments import ray_environment

    out = os.path.join(tmp, f"rows-{ingress}.json")
    cmd = [sys.executable, __file__, "--server-part", ingress, "--collection", path,
           "--tmp", tmp, "--part-out", out, "--seconds", str(seconds), "--clients",
           *map(str, clients_list), "--workloads", *workloads]
    env = {**os.environ, **ray_environment(ingress),
           "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])}
    subprocess.run(cmd, env=env, check=True, timeout=3600)
    with open(out) as f:
        part = json.load(f)
    return part["breakdown"], part["rows"]


def run_ragcore(ingress, path, questions, qvecs, clients_list, seconds, tmp,
                workload_names=("text", "vector")) -> tuple:
    import ray
    from ray import serve

    from ragcore.serve.deployments import APP_NAME, application

    results = []
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False,
             runtime_env={"env_vars": {"PYTHONPATH": str(SRC)}})
    info = {}
    try:
        serve.start(http_options={"host": "127.0.0.1", "port": port})
        workloads = {
            "text": [{"query": q, "k": 10} for q in questions],
            "vector": [{"query": "", "vector": v.tolist(), "mode": "dense", "k": 10}
                       for v in qvecs],
        }
        workloads = {name: workloads[name] for name in workload_names}
        for batching, max_batch, wait_ms in (("on", 64, 2.0), ("off", 1, 0.0)):
            serve.run(application(path, 1, max_batch, wait_ms), name=APP_NAME,
                      route_prefix="/")
            wait_healthy(url)
            if batching == "off":
                info = http_breakdown(url, questions, qvecs)
            for workload, bodies in workloads.items():
                for clients in clients_list:
                    import httpx

                    before = httpx.get(url + "/stats").json()["batch_sizes"]
                    row = load(url + "/search", bodies, clients, seconds, tmp)
                    after = httpx.get(url + "/stats").json()["batch_sizes"]
                    sizes = {int(s): n - before.get(s, 0) for s, n in after.items()
                             if n - before.get(s, 0) > 0}
                    nb = sum(sizes.values())
                    row.update(system=f"ragcore ({ingress})", workload=workload,
                               batching=batching,
                               mean_batch=sum(s * c for s, c in sizes.items()) / nb if nb else None,
                               max_batch_seen=max(sizes) if sizes else None)
                    results.append(row)
                    print(json.dumps(row), file=sys.stderr, flush=True)
            serve.delete(APP_NAME)
    finally:
        serve.shutdown()
        ray.shutdown()
    return info, results


def run_chroma(texts, vectors, qvecs, clients_list, seconds, tmp, results) -> str | None:
    """Chroma's server on the same documents and embeddings; None, or why it was left out."""
    exe = shutil.which("chroma") or str(Path(sys.executable).parent / "chroma")
    try:
        import chromadb
    except ImportError:
        return "chromadb is not installed"
    if not os.path.exists(exe):
        return "the chroma command is not installed"
    port = free_port()
    data = os.path.join(tmp, "chroma")
    proc = subprocess.Popen([exe, "run", "--path", data, "--host", "127.0.0.1", "--port",
                             str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 60
        while True:
            try:
                client = chromadb.HttpClient(host="127.0.0.1", port=port)
                client.heartbeat()
                break
            except Exception:  # noqa: BLE001 (not up yet)
                if time.time() > deadline:
                    return "chroma run did not start within 60 s"
                time.sleep(0.3)
        col = client.create_collection("bench", metadata={"hnsw:space": "cosine"},
                                       embedding_function=None)
        step = 2000
        for s in range(0, len(texts), step):
            col.add(ids=[str(i) for i in range(s, min(s + step, len(texts)))],
                    embeddings=vectors[s:s + step], documents=texts[s:s + step])
        endpoint = (f"http://127.0.0.1:{port}/api/v2/tenants/default_tenant/databases/"
                    f"default_database/collections/{col.id}/query")
        bodies = [{"query_embeddings": [v.tolist()], "n_results": 10,
                   "include": ["documents", "metadatas", "distances"]} for v in qvecs]
        for clients in clients_list:
            row = load(endpoint, bodies, clients, seconds, tmp)
            row.update(system=f"chroma {chromadb.__version__}", workload="vector",
                       batching="-", mean_batch=None, max_batch_seen=None)
            results.append(row)
            print(json.dumps(row), file=sys.stderr, flush=True)
    finally:
        proc.terminate()
        proc.wait(30)
    return None


PEERS = ("ray", "fastapi", "uvicorn", "uvloop", "chromadb")
COLUMNS = [{"key": "system", "label": "server"}, {"key": "workload", "label": "queries"},
           {"key": "batching", "label": "batching"}, {"key": "clients", "label": "clients"},
           {"key": "qps", "label": "QPS", "format": ",.0f"},
           {"key": "p50_ms", "label": "p50 ms", "format": ".1f"},
           {"key": "p99_ms", "label": "p99 ms", "format": ".1f"},
           {"key": "errors", "label": "errors"},
           {"key": "mean_batch", "label": "mean batch", "format": ".1f"}]
INTRO = ("ragcore serve on loopback under N concurrent closed-loop clients (bench/serve_loadgen.py "
         "in a process of its own), batching on (--max-batch 64, --batch-wait-ms 2) and off "
         "(--max-batch 1: one request at a time), behind HAProxy (--ingress haproxy) and Ray "
         "Serve's proxy (the default), and Chroma's own server (chroma run) given the same "
         "documents and embeddings; 10,000 chunks of the standard-library documentation, "
         "k = 10. text: hybrid search, the server encodes the question; vector: dense search "
         "of a precomputed query embedding (what Chroma gets).")


def write_results(rows: list, info: dict, command: str, chroma_note: str | None,
                  out_dir: Path | None = None) -> Path:
    """bench/results/serve.json in the results schema (bench/README.md)."""
    steps = sorted({k for v in info.values() if isinstance(v, dict) for k in v
                    if not isinstance(v[k], dict)})
    breakdown = [{"step": k, **{name: info[name][k] for name in info
                                if isinstance(info[name], dict) and k in info[name]}}
                 for k in steps]
    kinds = [name for name in info if name.startswith("http_sequential_ms_")]
    at32 = {(r["system"], r["workload"], r["batching"]): r["qps"] for r in rows
            if r["clients"] == 32}
    summary = []
    on, chroma = at32.get(("ragcore (haproxy)", "vector", "on")), \
        next((v for (s, w, b), v in at32.items() if s.startswith("chroma")), None)
    if on and chroma:
        summary.append({"row": "32 clients, vector queries (haproxy ingress)", "measure": "QPS",
                        "ragcore": on, "best_peer": "chroma run", "best_peer_value": chroma,
                        "higher_is_better": True})
    notes = ["mean batch: queries per batched search the server ran during the load"]
    if chroma_note:
        notes.append(f"Chroma: {chroma_note}")
    tables = [table("Load: QPS and latency by clients", COLUMNS, rows, notes)]
    if kinds:
        tables.append(table(
            "One request at a time: where the time goes (medians, ms)",
            [{"key": "step", "label": "step"}]
            + [{"key": k, "label": k.replace("http_sequential_ms_", "HTTP via "),
                "format": ".2f"} for k in kinds],
            [{"step": b["step"], **{k: b.get(k) for k in kinds}} for b in breakdown]))
    return write_section("serve", "ragcore serve under load", command, tables=tables,
                         threads=os.cpu_count(), order=85, intro=INTRO, summary=summary,
                         peers=PEERS, extra={"stages_in_process": info.get("stages_in_process")},
                         out_dir=out_dir)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, default=10_000)
    p.add_argument("--clients", type=int, nargs="+", default=[1, 8, 32, 128])
    p.add_argument("--seconds", type=float, default=5.0)
    p.add_argument("--no-chroma", action="store_true")
    p.add_argument("--ingress", nargs="+", default=["haproxy", "proxy"])
    p.add_argument("--workloads", nargs="+", default=["text", "vector"])
    p.add_argument("--out", default=None, help="a folder for serve.json (default bench/results)")
    p.add_argument("--server-part", default=None, help=argparse.SUPPRESS)
    p.add_argument("--collection", default=None, help=argparse.SUPPRESS)
    p.add_argument("--tmp", default=None, help=argparse.SUPPRESS)
    p.add_argument("--part-out", default=None, help=argparse.SUPPRESS)
    args = p.parse_args()
    sys.path.insert(0, str(HERE))
    if args.server_part:
        with open(os.path.join(args.tmp, "queries.json")) as f:
            questions = json.load(f)
        qvecs = np.load(os.path.join(args.tmp, "qvecs.npy"))
        info, rows = run_ragcore(args.server_part, args.collection, questions, qvecs,
                                 args.clients, args.seconds, args.tmp, args.workloads)
        with open(args.part_out, "w") as f:
            json.dump({"breakdown": info, "rows": rows}, f)
        return 0
    from ragcore.cli.datasets import stdlib_docs
    from ragcore.encoders import default_encoder

    texts, vectors = corpus(args.n)
    questions = list(stdlib_docs().questions)
    qvecs = np.ascontiguousarray(default_encoder().encode(questions[:400]), dtype=np.float32)
    tmp = tempfile.mkdtemp(prefix="serve-bench-")
    results: list[dict] = []
    info = {}
    try:
        path = os.path.join(tmp, "collection")
        build_collection(path, texts, vectors)
        with open(os.path.join(tmp, "queries.json"), "w") as f:
            json.dump(questions, f)
        np.save(os.path.join(tmp, "qvecs.npy"), qvecs)
        info["stages_in_process"] = stage_breakdown(path, questions)
        for ingress in args.ingress:
            info[f"http_sequential_ms_{ingress}"], rows = run_ragcore_process(
                ingress, path, args.clients, args.seconds, tmp, args.workloads)
            results += rows
        chroma_note = "left out (--no-chroma)" if args.no_chroma else \
            run_chroma(texts, vectors, qvecs, args.clients, args.seconds, tmp, results)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    command = " ".join(["python", *sys.argv])
    path = write_results(results, info, command, chroma_note,
                         None if args.out is None else Path(args.out))
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
