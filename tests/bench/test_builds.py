"""bench/builds.py: how the A/B tools name a build, put it first on PYTHONPATH and take turns."""

from __future__ import annotations

import argparse
import os

import pytest

from _bench_path import BENCH  # noqa: F401 (puts bench/ on sys.path)

import builds


def test_parse_names_a_build_and_resolves_its_path(tmp_path):
    name, path = builds.parse(f"before={tmp_path}")
    assert (name, path) == ("before", tmp_path.resolve())


@pytest.mark.parametrize("text", ["nopath", "=somewhere", "name=", "x=/no/such/folder/anywhere"])
def test_parse_refuses_what_is_not_name_equals_an_existing_path(text):
    with pytest.raises(argparse.ArgumentTypeError, match="--tree"):
        builds.parse(text, "--tree")


def test_a_builds_path_comes_first_on_pythonpath(monkeypatch, tmp_path):
    monkeypatch.setenv("PYTHONPATH", "/already/there")
    env = builds.environment(tmp_path, "/second")
    assert env["PYTHONPATH"].split(os.pathsep) == [str(tmp_path), "/second", "/already/there"]
    monkeypatch.delenv("PYTHONPATH")
    assert builds.environment(tmp_path)["PYTHONPATH"] == str(tmp_path)


def test_every_build_runs_once_a_round_and_the_order_rotates():
    turns = list(builds.in_turns([("a", 1), ("b", 2), ("c", 3)], 4))
    assert [(r, n) for r, n, _ in turns] == [
        (0, "a"), (0, "b"), (0, "c"), (1, "b"), (1, "c"), (1, "a"),
        (2, "c"), (2, "a"), (2, "b"), (3, "a"), (3, "b"), (3, "c")]
    assert all(path == {"a": 1, "b": 2, "c": 3}[n] for _, n, path in turns)
