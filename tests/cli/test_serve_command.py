"""`ragcore serve`'s refusals before anything starts: a missing API key variable, a path
that is not a collection, options out of range (exit status 2, a message naming them)."""

from __future__ import annotations

import pytest

from ragcore.cli.main import main


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
