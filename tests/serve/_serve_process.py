"""``ragcore serve`` started as a user starts it, in a process of its own, for the slow tests."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

import ragcore

# The directory holding the ragcore package the tests imported (src/ in a checkout with the
# module built beside it, site-packages once installed): the server runs the same package.
SRC = Path(ragcore.__file__).resolve().parents[1]
# Thirty short notes on six topics: what the slow tests serve.
TEXTS = [f"{topic} note {i}: {body}" for i, (topic, body) in enumerate(
    [("json", "parsing json documents with the json module"),
     ("regex", "regular expressions match patterns in strings"),
     ("sockets", "network sockets send and receive bytes"),
     ("threads", "threads run code concurrently with a lock"),
     ("csv", "reading and writing comma separated files"),
     ("dates", "dates, times and time zones with datetime")] * 5)]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def serving(path, key: str, *options: str):
    """(url, process) of ``ragcore serve path`` with API key `key`, once /health and /stats
    answer; stopped (SIGTERM) on exit."""
    port = free_port()
    env = {**os.environ, "RAGCORE_TEST_KEY": key,
           "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])}
    log = tempfile.TemporaryFile()
    server = subprocess.Popen(
        [sys.executable, "-m", "ragcore", "serve", str(path), "--port", str(port),
         "--num-cpus", "2", "--api-key-env", "RAGCORE_TEST_KEY", *options],
        env=env, stdout=subprocess.DEVNULL, stderr=log)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 240
        while True:
            if server.poll() is not None:
                log.seek(0)
                raise AssertionError("ragcore serve exited: "
                                     + log.read()[-3000:].decode(errors="replace"))
            try:
                if httpx.get(url + "/health", timeout=2).status_code == 200 and \
                        httpx.get(url + "/stats", headers={"X-API-Key": key},
                                  timeout=5).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.time() < deadline, "ragcore serve did not answer within 240 s"
            time.sleep(0.5)
        yield url, server
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(90)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(30)
        log.close()
