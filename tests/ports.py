"""Finding a free TCP port on loopback for a server a test starts (a console, a redis-server, a proxy...), and
waiting until the server accepts connections there."""

from __future__ import annotations

import os
import socket
import subprocess
import time

from tests.xdist_isolation import worker_share


def given_ports() -> range | None:
    """The ports ``$TASKQ_TEST_PORTS`` (``8160-8169``) gives this run, for servers meant to be reached from outside
    the test (a demo a person may look at); None when unset."""
    low, _, high = os.environ.get("TASKQ_TEST_PORTS", "").partition("-")
    return range(int(low), int(high or low) + 1) if low.strip().isdigit() else None


def free_port(ports: range | None = None) -> int:
    """The first port of ``ports`` nothing is bound to, or, without ``ports``, one the OS picks. Suites that run
    beside others on a shared machine pass the range they were given, so they never take each other's ports; under
    pytest-xdist each worker scans only its own share of the range."""
    if ports is None:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            return int(s.getsockname()[1])
    share = worker_share(ports)
    for port in share:
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free port in {share.start}-{share.stop - 1}")


def accepting(process: subprocess.Popen[bytes], port: int, timeout: float) -> bool:
    """Wait until a server that ``process`` starts accepts connections on loopback ``port``: True then, False as
    soon as the process has exited or ``timeout`` seconds have passed (the caller says why, from its log)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return True
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                return False
            time.sleep(0.1)
