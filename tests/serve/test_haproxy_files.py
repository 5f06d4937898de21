"""haproxy_files: the JSON 503 page HAProxy answers with, and the script Ray runs as
HAProxy, which puts that page over Ray's plain-text one and then runs the real binary with
the same arguments. The real binary here is a stand-in that records its arguments."""

from __future__ import annotations

import json
import os
import stat
import subprocess

from ragcore.serve.haproxy_files import error_page, prepare


def test_the_error_page_is_a_complete_json_503():
    head, body = error_page().split(b"\r\n\r\n", 1)
    lines = head.decode().split("\r\n")
    assert lines[0] == "HTTP/1.1 503 Service Unavailable"
    headers = dict(line.split(": ", 1) for line in lines[1:])
    assert headers["Content-Type"] == "application/json"
    assert int(headers["Content-Length"]) == len(body)
    assert json.loads(body)["field"] == "service"


def test_the_script_puts_the_page_over_rays_and_runs_the_real_binary(tmp_path, monkeypatch):
    recorded = tmp_path / "args"
    real = tmp_path / "real-haproxy"
    real.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > {recorded}\n')
    real.chmod(0o700)
    monkeypatch.setenv("RAY_SERVE_HAPROXY_BINARY_PATH", str(real))
    env = prepare()
    directory = env["RAY_SERVE_HAPROXY_SERVER_STATE_BASE"]
    assert stat.S_IMODE(os.stat(directory).st_mode) == 0o700
    assert all(path.startswith(directory) for path in env.values())
    # what Ray does: its page next to the configuration, in a folder per node, then a start
    node = os.path.join(directory, "node-1")
    os.makedirs(node)
    with open(os.path.join(node, "500.http"), "w") as f:
        f.write("HTTP/1.1 500 Internal Server Error\r\n\r\nInternal Server Error")
    args = ["-db", "-f", os.path.join(node, "haproxy.cfg"), "-sf", "123 456"]
    subprocess.run([env["RAY_SERVE_HAPROXY_BINARY_PATH"], *args], check=True, timeout=30)
    with open(os.path.join(node, "500.http"), "rb") as f:
        assert f.read() == error_page()
    assert recorded.read_text().splitlines() == args


def test_a_script_that_cannot_write_the_page_does_not_start_haproxy(tmp_path, monkeypatch):
    recorded = tmp_path / "args"
    real = tmp_path / "real-haproxy"
    real.write_text(f"#!/bin/sh\ntouch {recorded}\n")
    real.chmod(0o700)
    monkeypatch.setenv("RAY_SERVE_HAPROXY_BINARY_PATH", str(real))
    script = prepare()["RAY_SERVE_HAPROXY_BINARY_PATH"]
    missing = tmp_path / "no-such-folder" / "haproxy.cfg"
    done = subprocess.run([script, "-f", str(missing)], capture_output=True, timeout=30)
    assert done.returncode != 0
    assert not recorded.exists()


def test_rays_per_request_haproxy_metrics_are_off_unless_asked_for(tmp_path, monkeypatch):
    from ragcore.serve.deployments import HAPROXY_METRICS_VARIABLE, ray_environment

    real = tmp_path / "real-haproxy"
    real.write_text("#!/bin/sh\n")
    real.chmod(0o700)
    monkeypatch.setenv("RAY_SERVE_HAPROXY_BINARY_PATH", str(real))
    monkeypatch.delenv(HAPROXY_METRICS_VARIABLE, raising=False)
    assert ray_environment("haproxy")[HAPROXY_METRICS_VARIABLE] == "0"
    monkeypatch.setenv(HAPROXY_METRICS_VARIABLE, "1")  # the caller's choice is kept
    assert ray_environment("haproxy")[HAPROXY_METRICS_VARIABLE] == "1"
    assert HAPROXY_METRICS_VARIABLE not in ray_environment("proxy")
