"""redis-servers a test starts with a configuration of its own: one whose configuration disables INFO
(``--rename-command INFO ""``), as hardened and managed Redis setups often do, or one with another maxmemory."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

from tests.ports import free_port
from tests.topology.topology_support import _require, _start


@contextmanager
def started_redis(workdir: Path, *args: str) -> Iterator[str]:
    """The URL (database 1) of a redis-server started with ``args`` for the caller and killed when it is done."""
    port = free_port()
    processes: list[subprocess.Popen] = []
    _start(processes, [_require("redis-server"), "--save", "", *args], workdir, port)
    try:
        yield f"redis://127.0.0.1:{port}/1"
    finally:
        for process in processes:
            process.kill()
            process.wait()


def redis_without_info(workdir: Path) -> AbstractContextManager[str]:
    """A redis-server whose INFO command is disabled."""
    return started_redis(workdir, "--rename-command", "INFO", '""')
