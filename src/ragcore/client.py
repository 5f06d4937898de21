"""``Client(url, api_key=)``: a served collection (``ragcore serve``) with the
Collection's search / add / upsert / delete / get signatures, so code moves between
embedded and served use unchanged. Refusals raise ServiceError (FilterError for a bad
filter), with the HTTP status and the field the server named."""

from __future__ import annotations

import numpy as np

from .errors import FilterError, ServiceError
from .rag.collection.collection import Document, Match

__all__ = ["Client"]


class Client:
    def __init__(self, url: str, api_key: str | None = None, timeout: float = 30.0):
        import httpx

        headers = {} if api_key is None else {"Authorization": f"Bearer {api_key}"}
        self._http = httpx.Client(base_url=url.rstrip("/"), headers=headers, timeout=timeout)

    def close(self) -> None:
        self._http.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def search(self, query, k: int = 10, mode: str = "hybrid", filter=None, fusion=None,
               k0: int | None = None, by: str = "chunk", query_vector=None):
        """One query (a str: a list of Match) or a list of queries (a list of such lists)."""
        single = isinstance(query, str)
        body = {"k": k, "mode": mode, "by": by}
        body["query" if single else "queries"] = query if single else list(query)
        for name, value in (("filter", filter), ("fusion", fusion), ("k0", k0)):
            if value is not None:
                body[name] = value
        if query_vector is not None:
            vectors = np.asarray(query_vector, dtype=np.float32)
            body["vector" if single else "vectors"] = vectors.tolist()
        results = self._call("POST", "/search", body)["results"]
        rows = [results] if single else results
        out = [[Match(m["id"], m["chunk_id"], m["position"], m["start"], m["end"],
                      m.get("text", ""), m["score"], m["metadata"]) for m in row] for row in rows]
        return out[0] if single else out

    def add(self, texts, ids=None, metadata=None, embeddings=None) -> list:
        return self._write(texts, ids, metadata, embeddings, upsert=False)

    def upsert(self, texts, ids, metadata=None, embeddings=None) -> list:
        return self._write(texts, ids, metadata, embeddings, upsert=True)

    def delete(self, ids, missing_ok: bool = False) -> int:
        return self._call("DELETE", "/documents", {"ids": list(ids),
                                                   "missing_ok": missing_ok})["deleted"]

    def get(self, ids) -> list[Document]:
        """The documents with these ids that exist, in the order asked."""
        out = []
        for i in ids:
            try:
                d = self._call("GET", f"/documents/{_path_id(i)}")
            except ServiceError as err:
                if err.status == 404:
                    continue
                raise
            out.append(Document(d["id"], d["text"], d["metadata"]))
        return out

    def count(self) -> int:
        return self.stats()["documents"]

    def __len__(self) -> int:
        return self.count()

    def stats(self) -> dict:
        return self._call("GET", "/stats")

    def health(self) -> bool:
        return self._call("GET", "/health").get("status") == "ok"

    def _write(self, texts, ids, metadata, embeddings, upsert: bool) -> list:
        body = {"texts": list(texts), "upsert": upsert}
        if ids is not None:
            body["ids"] = [i if isinstance(i, str) else int(i) for i in ids]
        if metadata is not None:
            body["metadata"] = list(metadata)
        if embeddings is not None:
            body["embeddings"] = np.asarray(embeddings, dtype=np.float32).tolist()
        return self._call("POST", "/documents", body)["ids"]

    def _call(self, method: str, path: str, body=None) -> dict:
        reply = self._send(method, path, body)
        try:
            data = reply.json()
        except ValueError:
            data = {"error": reply.text}
        if reply.status_code >= 400:
            field = data.get("field") if isinstance(data, dict) else None
            message = data.get("error", reply.text) if isinstance(data, dict) else reply.text
            message = f"{method} {path}: {reply.status_code}: {message}"
            if field == "filter":
                raise FilterError(message)
            raise ServiceError(message, reply.status_code, field)
        return data

    def _send(self, method: str, path: str, body):
        """The reply. A request whose connection is closed without an answer (HAProxy does
        that, by design, when the replica holding it dies: the client is to retry) is
        sent again once for a read; a write is not, as it may have been applied, and is
        a ServiceError with status 503 like the default proxy's answer."""
        import httpx

        reads = method == "GET" or path == "/search"
        try:
            return self._http.request(method, path, json=body)
        except httpx.RemoteProtocolError as err:
            if not reads:
                raise _closed_without_answer(method, path, err, " (it may have been applied)") \
                    from err
        try:
            return self._http.request(method, path, json=body)
        except httpx.RemoteProtocolError as err:
            raise _closed_without_answer(method, path, err, " (sent twice)") from err


def _closed_without_answer(method: str, path: str, err, what: str) -> ServiceError:
    return ServiceError(f"{method} {path}: the service closed the connection without an "
                        f"answer{what}: {err}; retry", 503, "service")


def _path_id(doc_id) -> str:
    from urllib.parse import quote

    return quote(str(doc_id), safe="")
