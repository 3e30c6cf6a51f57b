"""Shared parts of the chaos suite: throwaway redis-servers on AOF that a test can kill -9 and restart, a TCP
proxy that can blackhole, reset or delay the traffic of one worker, ``taskworker`` processes and a supervisor
that restarts them like systemd would, the completion log the handlers append to, and the figures sink.

Imported by the test modules by name (never from conftest). Ports come from small fixed ranges so that helpers
and CI runs sharing a machine know which ones a test may take.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import shutil
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import redis

from tests.chaos.netns import enter
from tests.ports import free_port  # the chaos tests import it from here
from tests.waiting import WAIT, state_of, wait_for  # noqa: F401 - the chaos tests import them from here

# Worker processes with short leases and intervals (2 s), so a crashed worker's tasks come back within seconds.
from tests.worker.worker_support import kill_process, worker_env  # kill_process re-exported too

ROOT = Path(__file__).resolve().parents[2]
# Four ports for each of `make test`'s two xdist workers (tests/xdist_isolation.py gives each half of a range).
REDIS_PORTS = range(6391, 6399)  # throwaway redis-servers (6399 is the benchmarks' own Redis)
PROXY_PORTS = range(6491, 6499)  # chaos proxies
DONE_FILE_ENV = "CHAOS_DONE_FILE"  # where chaos_tasks appends the id of every run that reached its end
FIGURES_ENV = "CHAOS_FIGURES"  # bench/chaos_figures.py collects the scenarios' figures here (JSON lines)
SCALE_ENV = "CHAOS_SCALE"  # bench/chaos_figures.py multiplies the task counts by this


def scale(n: int) -> int:
    """A scenario's task count: as written for CI, or larger when bench/chaos_figures.py asks for it."""
    return max(1, int(n * float(os.environ.get(SCALE_ENV) or 1)))


def record_figures(scenario: str, **figures: Any) -> None:
    """Append one scenario's figures for bench/chaos_figures.py; a plain test run writes nothing."""
    path = os.environ.get(FIGURES_ENV)
    if path:
        with open(path, "a") as out:
            out.write(json.dumps({"scenario": scenario, **figures}) + "\n")


# -- Redis on AOF ---------------------------------------------------------------------------------------------


class RedisServer:
    """A redis-server of our own on AOF in a temp directory, which a test may kill -9 and start again on the
    same port and files (what systemd does after a crash)."""

    def __init__(self, data: Path, appendfsync: str = "always") -> None:
        self.data = data
        self.appendfsync = appendfsync
        self.port = free_port(REDIS_PORTS)
        self.url = f"redis://127.0.0.1:{self.port}/0"  # db 0 of our own throwaway server, not the shared one
        self.procs: list[subprocess.Popen] = []
        data.mkdir(parents=True, exist_ok=True)

    def start(self) -> None:
        proc = subprocess.Popen(
            [
                "redis-server",
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--appendonly",
                "yes",
                "--appendfsync",
                self.appendfsync,
                "--dir",
                str(self.data),
                "--save",
                "",
                "--daemonize",
                "no",
                "--logfile",
                str(self.data / "redis.log"),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        self.procs.append(proc)
        probe = redis.Redis(port=self.port, socket_connect_timeout=0.5)

        def answers() -> bool:
            try:
                return bool(probe.ping())
            except (redis.ConnectionError, redis.BusyLoadingError):
                assert proc.poll() is None, f"redis-server exited:\n{self.log()}"
                return False

        try:
            wait_for(answers, interval=0.05, what=f"redis-server on port {self.port}")
        finally:
            probe.close()

    def kill9(self) -> None:
        proc = self.procs[-1]
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)

    def log(self) -> str:
        path = self.data / "redis.log"
        return path.read_text(errors="replace")[-2000:] if path.exists() else "(no log)"

    def stop(self) -> None:
        for proc in self.procs:
            kill_process(proc)
        shutil.rmtree(self.data, ignore_errors=True)


# -- the chaos proxy ------------------------------------------------------------------------------------------


class ChaosProxy:
    """A TCP proxy between one worker and Redis, run by an asyncio loop in a thread of the test.

    - ``blackhole()``: bytes stop flowing both ways but are kept, as in a network partition that TCP rides out
      by retransmitting; ``heal()`` delivers them late, so a request sent before the partition reaches Redis
      after it (the stale acknowledgement the fence must refuse).
    - ``reset()``: every connection is closed with a TCP RST and new ones are reset at once until ``heal()``.
    - ``delay(seconds, jitter)``: each chunk is delivered that long after it arrived, plus up to ``jitter`` more
      (latency, not a throughput cap; chunks keep their order, as TCP's do).

    With ``namespace``, the proxy's thread runs in that network namespace (``netns.enter``), listening there on
    ``listen_host`` and reaching the target from there: the proxy on the Redis host's side of a worker host's link.
    """

    def __init__(
        self,
        target_host: str,
        target_port: int,
        ports: range = PROXY_PORTS,
        namespace: str | None = None,
        listen_host: str = "127.0.0.1",
    ) -> None:
        self.target = (target_host, target_port)
        self.port = free_port(ports)
        self.namespace = namespace
        self.listen_host = listen_host
        self.connections_reset = 0
        self._delay = 0.0
        self._jitter = 0.0
        self._refusing = False
        self._loop = asyncio.new_event_loop()
        self._flowing = asyncio.Event()
        self._writers: set[asyncio.StreamWriter] = set()
        self._server: asyncio.AbstractServer | None = None
        self._thread = threading.Thread(target=self._serve, name="chaos-proxy", daemon=True)

    def url(self, db: int) -> str:
        return f"redis://127.0.0.1:{self.port}/{db}"

    def start(self) -> None:
        self._thread.start()
        self._call(self._flowing.set)
        self._run(self._listen())

    def blackhole(self) -> None:
        self._call(self._flowing.clear)

    def delay(self, seconds: float, jitter: float = 0.0) -> None:
        self._delay, self._jitter = seconds, jitter

    def reset(self) -> None:
        self._refusing = True
        self._run(self._reset_all())

    def heal(self) -> None:
        self._refusing = False
        self._delay = self._jitter = 0.0
        self._call(self._flowing.set)

    def stop(self) -> None:
        self.heal()
        self._run(self._close())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)
        self._loop.close()

    # -- inside the loop ---------------------------------------------------------------------------------------

    def _serve(self) -> None:
        if self.namespace is not None:
            enter(self.namespace)
        self._loop.run_forever()

    def _call(self, fn: Any) -> None:
        self._loop.call_soon_threadsafe(fn)

    def _run(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(10)

    async def _listen(self) -> None:
        self._server = await asyncio.start_server(self._accept, self.listen_host, self.port)

    async def _close(self) -> None:
        if self._server is not None:
            self._server.close()
        await self._reset_all()

    async def _reset_all(self) -> None:
        for writer in list(self._writers):
            self._abort(writer)

    def _abort(self, writer: asyncio.StreamWriter) -> None:
        sock = writer.get_extra_info("socket")
        if sock is not None and not writer.transport.is_closing():
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # close sends RST
            self.connections_reset += 1
        writer.transport.abort()
        self._writers.discard(writer)

    async def _accept(self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        if self._refusing:
            self._abort(client_writer)
            return
        try:
            server_reader, server_writer = await asyncio.open_connection(*self.target)
        except OSError:
            self._abort(client_writer)
            return
        self._writers |= {client_writer, server_writer}
        pipes = [
            asyncio.ensure_future(self._pipe(client_reader, server_writer)),
            asyncio.ensure_future(self._pipe(server_reader, client_writer)),
        ]
        try:
            await asyncio.wait(pipes, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for pipe in pipes:
                pipe.cancel()
            for writer in (client_writer, server_writer):
                self._writers.discard(writer)
                writer.transport.abort()

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        # Reading never stops, so a blackhole holds what was sent instead of pushing back on the sender.
        chunks: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()

        async def read() -> None:
            while True:
                try:
                    data = await reader.read(65536)
                except OSError:
                    data = b""
                chunks.put_nowait((self._loop.time(), data))
                if not data:
                    return

        reading = asyncio.ensure_future(read())
        try:
            while True:
                received, data = await chunks.get()
                if not data:
                    return
                await self._flowing.wait()
                late = received + self._delay + random.uniform(0, self._jitter) - self._loop.time()
                if late > 0:
                    await asyncio.sleep(late)
                    await self._flowing.wait()  # a blackhole that began during the delay holds it too
                writer.write(data)
                await writer.drain()
        except OSError:
            return
        finally:
            reading.cancel()


# -- worker processes ----------------------------------------------------------------------------------------


def start_worker(
    redis_url: str,
    queue: str,
    done_file: Path,
    log: Path,
    concurrency: int = 4,
    prefix: list[str] | None = None,
    **env: str,
) -> subprocess.Popen:
    """A ``manage.py taskworker`` process running the handlers of chaos_tasks.py, its output appended to ``log``;
    ``prefix`` goes in front of the command (``ip netns exec HOST``), ``env`` over the worker tests' settings."""
    with log.open("ab") as out:
        return subprocess.Popen(
            [
                *(prefix or []),
                sys.executable,
                "manage.py",
                "taskworker",
                "--queues",
                queue,
                "--concurrency",
                str(concurrency),
                "--import",
                "tests.chaos.chaos_tasks",
            ],
            cwd=ROOT,
            env=worker_env(redis_url, **{DONE_FILE_ENV: str(done_file), **env}),
            stdout=out,
            stderr=subprocess.STDOUT,
        )


class Supervisor:
    """Keeps worker processes running: one that dies is started again after a short pause (systemd's
    ``Restart=always``). Counts the restarts and the exit codes it saw."""

    def __init__(self, start: Any, count: int, pause: float = 0.2) -> None:
        self._start = start
        self.procs = [start(n) for n in range(count)]
        self.exits: list[int] = []
        self.pause = pause
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="supervisor", daemon=True)
        self._thread.start()

    @property
    def restarts(self) -> int:
        return len(self.exits)

    def _watch(self) -> None:
        while not self._stop.wait(0.05):
            for n, proc in enumerate(self.procs):
                if proc.poll() is not None and not self._stop.is_set():
                    self.exits.append(proc.returncode)
                    time.sleep(self.pause)
                    self.procs[n] = self._start(n)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)
        for proc in self.procs:
            kill_process(proc)


def completions(done_file: Path) -> Counter[str]:
    """How many runs of each task id reached their end (a count above 1 is a duplicate execution)."""
    if not done_file.exists():
        return Counter()
    return Counter(line for line in done_file.read_text().splitlines() if line)


def logs(folder: Path) -> str:
    """The tail of every log in ``folder``, for a failure message."""
    return "\n".join(f"--- {f.name}\n{f.read_text(errors='replace')[-3000:]}" for f in sorted(folder.glob("*.log")))
