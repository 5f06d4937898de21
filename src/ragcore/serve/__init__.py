"""``ragcore serve``: a Collection (or a ShardedCollection) behind a JSON API on Ray Serve.

Concurrent single-query requests are gathered (``gather.local_batch``, the contract of Ray
Serve's ``@serve.batch`` at a smaller cost per request) into one batched call of the Collection (one encoder call, one native dense and BM25 scan for the
batch). The ingress deployment is itself the batching reader, so a request makes one hop
from the HTTP proxy; writes go to one writer deployment (the collection's single-writer
rule). ``build_app`` gives the same routes without Ray (tests, embedding in another
ASGI server); ``ragcore.client.Client`` speaks the API from Python.
"""

from .app import build_app
from .backend import LocalBackend

__all__ = ["build_app", "LocalBackend"]
