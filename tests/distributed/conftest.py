"""A local Ray for the modules that ask for it (the kill tests start a cluster of their own)."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def local_ray():
    """Ray on this machine, started for the module unless one is already running."""
    ray = pytest.importorskip("ray")
    started = not ray.is_initialized()
    if started:
        ray.init(num_cpus=2, include_dashboard=False, logging_level="ERROR",
                 log_to_driver=False)
    yield
    if started:
        ray.shutdown()
