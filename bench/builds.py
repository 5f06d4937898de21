"""Builds of ragcore measured in turns: the one way bench/ab.py, entry_latency.py,
fuzz_rate.py and serve_ab.py name a build, put it on PYTHONPATH and take turns (the order
rotated every round, so that a busier minute of a shared machine hits each build alike)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path


def parse(text: str, flag: str = "--build") -> tuple[str, Path]:
    """NAME=PATH (an argparse type): the name and the resolved path, which must exist."""
    name, sep, path = text.partition("=")
    if not sep or not name or not path:
        raise argparse.ArgumentTypeError(f"{flag} takes NAME=PATH, got {text!r}")
    path = Path(path).expanduser().resolve()
    if not path.exists():
        raise argparse.ArgumentTypeError(f"{flag} {name}: {path} does not exist")
    return name, path


def environment(*paths) -> dict:
    """This process's environment with paths first on PYTHONPATH (a build's package folder
    first, so that its ragcore is the one imported)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([*map(str, paths), env.get("PYTHONPATH", "")]) \
        .rstrip(os.pathsep)
    return env


def in_turns(builds: list, rounds: int):
    """(round, name, path) for every build in every round, the order rotated each round."""
    for r in range(rounds):
        shift = r % len(builds)
        for name, path in builds[shift:] + builds[:shift]:
            yield r, name, path
