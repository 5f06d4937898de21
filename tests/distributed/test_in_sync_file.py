"""The in-sync file of a ShardedCollection: written whole and read back; a missing file
means every replica; a damaged or crafted one is a CollectionError, never trusted."""

import json

import pytest

from ragcore import CollectionError
from ragcore.distributed import _in_sync


def test_a_missing_file_means_every_replica(tmp_path):
    assert _in_sync.read(str(tmp_path), 3, 2) == [{0, 1}, {0, 1}, {0, 1}]


def test_a_saved_change_is_read_back_and_the_other_shards_are_kept(tmp_path):
    record = _in_sync.Record(str(tmp_path), [{0, 1}, {0, 1}])
    record.save(1, {0})
    assert _in_sync.read(str(tmp_path), 2, 2) == [{0, 1}, {0}]
    assert record[1] == {0} and sorted(p.name for p in tmp_path.iterdir()) == [_in_sync.NAME]


@pytest.mark.parametrize("content", [
    "not json",
    json.dumps([[0, 1]]),
    json.dumps({"format_version": 2, "shards": [[0], [1]]}),
    json.dumps({"format_version": 1, "shards": [[0]]}),  # one shard of two
    json.dumps({"format_version": 1, "shards": [[0], []]}),  # no replica in sync
    json.dumps({"format_version": 1, "shards": [[0], [2]]}),  # no replica 2
    json.dumps({"format_version": 1, "shards": [[0], [-1]]}),
    json.dumps({"format_version": 1, "shards": [[0], [True]]}),
    json.dumps({"format_version": 1, "shards": [[0], ["1"]]}),
])
def test_a_damaged_or_crafted_file_is_refused(tmp_path, content):
    (tmp_path / _in_sync.NAME).write_text(content)
    with pytest.raises(CollectionError, match=_in_sync.NAME):
        _in_sync.read(str(tmp_path), 2, 2)
