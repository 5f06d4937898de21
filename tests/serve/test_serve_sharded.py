"""``ragcore serve`` of a ShardedCollection directory, for real (Ray, Ray Serve, loopback):
answers equal one Collection's of the same documents, and writes go through the shards
(slow tier: tests/conftest.py)."""

from __future__ import annotations

import httpx
import pytest

pytest.importorskip("ray.serve")
pytest.importorskip("fastapi")

from _serve_data import make_sharded  # noqa: E402
from _serve_process import TEXTS, serving  # noqa: E402
from ragcore.client import Client  # noqa: E402
from ragcore.rag.collection import Collection  # noqa: E402

KEY = "sharded-test-key"
IDS = list(range(len(TEXTS)))
METADATA = [{"n": i % 3} for i in range(len(TEXTS))]
QUERIES = ["parse json", "time zones", "network bytes", "a lock for threads"]


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    root = tmp_path_factory.mktemp("served-sharded")
    make_sharded(root / "sharded", TEXTS, IDS, METADATA, n_shards=2)
    with Collection.create(root / "one", chunker="none") as one:
        one.add(TEXTS, ids=IDS, metadata=METADATA)
    with serving(root / "sharded", KEY, "--max-batch", "16") as (url, _):
        yield url, root / "one"


def _answers(results) -> list:
    return [[(m.id, round(m.score, 4)) for m in r] for r in results]


def test_answers_equal_one_collection_of_the_same_documents(served):
    url, one = served
    with Collection.open(one, readonly=True) as col:
        want = {mode: _answers(col.search(QUERIES, k=5, mode=mode))
                for mode in ("hybrid", "sparse", "dense")}
        want_filtered = _answers(col.search(QUERIES, k=5, filter={"n": 1}))
    with Client(url, api_key=KEY) as client:
        for mode, expected in want.items():
            assert _answers(client.search(QUERIES, k=5, mode=mode)) == expected, mode
        assert _answers(client.search(QUERIES, k=5, filter={"n": 1})) == want_filtered
        assert client.count() == len(TEXTS)
        assert client.get([3])[0].text == TEXTS[3]
    bad = httpx.post(url + "/search", json={"query": "json", "filter": {"n": {"$nope": 1}}},
                     headers={"X-API-Key": KEY}, timeout=30)
    assert bad.status_code == 422 and bad.json()["field"] == "filter"


def test_writes_go_through_the_shards_and_reach_the_readers(served):
    url, _ = served
    new = ["zebra crossing in the rain", "a yak in the snow", "quokka on an island"]
    with Client(url, api_key=KEY) as client:
        assert client.add(new, ids=[500, 501, 502]) == [500, 501, 502]
        assert client.count() == len(TEXTS) + 3
        assert client.search("zebra crossing", k=1, mode="sparse")[0].id == 500
        assert client.search("quokka island", k=1, mode="sparse")[0].id == 502
        assert [d.text for d in client.get([501, 500])] == [new[1], new[0]]
        assert client.delete([500, 501, 502]) == 3
        assert client.get([500]) == []
        assert 500 not in [m.id for m in client.search("zebra crossing", k=40, mode="sparse")]
        assert client.count() == len(TEXTS)
