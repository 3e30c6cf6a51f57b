"""Real Redis topologies for the tests of this folder, on their own loopback ports, in temp dirs, torn down after.

Both topologies live for the whole session (pytest-django runs the tests that use the database first, which
would split a module-scoped one in two starts).

- ``redis_cluster``: a 3-node Redis Cluster (ports 7301-7303, bus ports +10000), built with
  ``redis-cli --cluster create``; yields its ``redis+cluster://`` URL.
- ``sentinel_topology``: a master (6381), a replica (6382) and three sentinels (26381-26383, Debian's
  redis-sentinel) watching them as ``taskq``; yields a ``SentinelTopology`` (its URL and the processes).
- ``replicated_cluster``: three masters and three replicas (ports 7311-7316) with automatic failover; yields a
  ``ReplicatedCluster`` (its URL, and kill/restart of a node).
- ``topology_worker``: starts ``manage.py taskworker`` subprocesses on a URL, killed at teardown.

Helpers and fixtures only: the tests import them from here (conftest.py only makes the fixtures visible).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import redis
from redis.crc import key_slot

from taskq.queues.engine import Inspector, TaskNotFoundError
from tests.waiting import wait_for
from tests.worker.worker_support import kill_process, start_taskworker

CLUSTER_PORTS = (7301, 7302, 7303)
MASTER_PORT, REPLICA_PORT = 6381, 6382
SENTINEL_PORTS = (26381, 26382, 26383)
SERVICE = "taskq"
TASKS_MODULE = "tests.topology.topology_tasks"
DONE_FILE = "done.txt"
DONE_FILE_ENV = "TOPOLOGY_DONE_FILE"  # read by topology_tasks
FIGURES_ENV = "TOPOLOGY_FIGURES"  # a file to append the failover figures to (JSON), for docs/reliability.md


def _require(binary: str) -> str:
    path = shutil.which(binary)
    if path is None:
        pytest.fail(f"{binary} is not installed: run scripts/ensure-redis-sentinel.sh (make test does)")
    return path


def answers(probe: redis.Redis) -> bool:
    """Whether the server behind ``probe`` answers PING; the probe is closed either way."""
    try:
        return bool(probe.ping())
    except redis.RedisError:
        return False
    finally:
        probe.close()


def _ping(port: int) -> bool:
    return answers(redis.Redis(port=port, socket_connect_timeout=0.5, socket_timeout=1))


def task_exists(inspector: Inspector, queues: list[str], task_id: str) -> bool:
    """Whether any of ``queues`` still holds the task (in whatever state)."""
    for queue in queues:
        try:
            inspector.get_task(queue, task_id)
            return True
        except TaskNotFoundError:
            continue
    return False


def _start(processes: list[subprocess.Popen], args: list[str], workdir: Path, port: int) -> subprocess.Popen:
    """A foreground server process (killed by its owner's teardown), once it answers PING."""
    if _ping(port):
        pytest.fail(f"port {port} is already taken by a Redis: a previous run left it behind")
    workdir.mkdir(parents=True, exist_ok=True)
    log = workdir / "server.log"
    proc = subprocess.Popen(
        args
        + [
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--dir",
            str(workdir),
            "--logfile",
            str(log),
            "--daemonize",
            "no",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    processes.append(proc)

    def up() -> bool:
        assert proc.poll() is None, f"{args[0]} on {port} exited:\n{log.read_text(errors='replace')[-2000:]}"
        return _ping(port)

    wait_for(up, timeout=15, interval=0.05, what=f"{Path(args[0]).name} on port {port}")
    return proc


def stop(proc: subprocess.Popen) -> None:
    """SIGKILL one process this module started, and reap it."""
    if proc.poll() is None:
        proc.kill()
        proc.wait(10)


# -- Redis Cluster ----------------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def redis_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    server, cli = _require("redis-server"), _require("redis-cli")
    base = tmp_path_factory.mktemp("cluster")
    processes: list[subprocess.Popen] = []
    try:
        for port in CLUSTER_PORTS:
            _start(
                processes,
                [
                    server,
                    "--cluster-enabled",
                    "yes",
                    "--cluster-config-file",
                    "nodes.conf",
                    "--cluster-node-timeout",
                    "2000",
                    "--save",
                    "",
                    "--appendonly",
                    "no",
                ],
                base / str(port),
                port,
            )
        created = subprocess.run(
            [
                cli,
                "--cluster",
                "create",
                *[f"127.0.0.1:{p}" for p in CLUSTER_PORTS],
                "--cluster-replicas",
                "0",
                "--cluster-yes",
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert created.returncode == 0, f"redis-cli --cluster create failed:\n{created.stdout}\n{created.stderr}"
        wait_for(
            lambda: all(_cluster_ok(p) for p in CLUSTER_PORTS),
            timeout=30,
            interval=0.1,
            what="cluster_state:ok on every node",
        )
        yield "redis+cluster://" + ",".join(f"127.0.0.1:{p}" for p in CLUSTER_PORTS[:2])
    finally:
        for proc in processes:
            stop(proc)


def _cluster_ok(port: int) -> bool:
    probe = redis.Redis(port=port, socket_connect_timeout=0.5)
    try:
        return "cluster_state:ok" in str(probe.execute_command("CLUSTER", "INFO"))
    finally:
        probe.close()


def flush_cluster() -> None:
    for port in CLUSTER_PORTS:
        probe = redis.Redis(port=port)
        probe.flushall()
        probe.close()


# -- Redis Cluster with replicas, for failover ------------------------------------------------------------------

REPLICATED_PORTS = (7311, 7312, 7313, 7314, 7315, 7316)
NODE_TIMEOUT_MS = 1000  # how long a master may be unreachable before its replica is promoted


@dataclass
class ReplicatedCluster:
    """Three masters and three replicas (``redis-cli --cluster create --cluster-replicas 1``) with real automatic
    failover. A test may SIGKILL a master (``kill``) and start it again (``restart``): it comes back on its own
    files and rejoins as a replica of the node that took its slots, as a restarted node does in production."""

    url: str
    base: Path
    processes: dict[int, subprocess.Popen] = field(default_factory=dict)
    started: list[subprocess.Popen] = field(default_factory=list)

    def node(self, port: int) -> redis.Redis:
        return redis.Redis(port=port, socket_connect_timeout=0.5, socket_timeout=2)

    def master_of(self, key: str) -> int:
        """The port of the live master serving ``key``'s slot."""
        slot = key_slot(key.encode())
        for port in self.live_ports():
            probe = self.node(port)
            try:
                for first, last, master, *_ in probe.execute_command("CLUSTER", "SLOTS"):
                    if first <= slot <= last:
                        return int(master[1])
            except redis.RedisError:
                continue
            finally:
                probe.close()
        raise AssertionError(f"no live node knows the master of slot {slot}")

    def live_ports(self) -> list[int]:
        return [port for port, proc in self.processes.items() if proc.poll() is None]

    def kill(self, port: int) -> None:
        stop(self.processes[port])

    def restart(self, port: int) -> None:
        self.processes[port] = _start(self.started, _cluster_node_args(), self.base / str(port), port)

    def healthy(self) -> bool:
        """Every node up and ``cluster_state:ok``, three masters, each with a replica in sync."""
        masters = 0
        for port in REPLICATED_PORTS:
            if self.processes[port].poll() is not None or not _cluster_ok(port):
                return False
            probe = self.node(port)
            try:
                info = probe.info("replication")
            finally:
                probe.close()
            if info["role"] == "master":
                masters += 1
                if info.get("connected_slaves", 0) < 1:
                    return False
            elif info.get("master_link_status") != "up":
                return False
        return masters == 3

    def ensure_healthy(self) -> None:
        """Start a node a previous test left dead, and wait until it has rejoined and caught up."""
        for port in REPLICATED_PORTS:
            if self.processes[port].poll() is not None:
                self.restart(port)
        wait_for(self.healthy, timeout=60, interval=0.1, what=f"the cluster healthy again\n{_logs(self.base)}")

    def flush(self) -> None:
        for port in self.live_ports():
            probe = self.node(port)
            try:
                if probe.info("replication")["role"] == "master":
                    probe.flushall()
            finally:
                probe.close()


def _cluster_node_args() -> list[str]:
    return [
        _require("redis-server"),
        "--cluster-enabled",
        "yes",
        "--cluster-config-file",
        "nodes.conf",
        "--cluster-node-timeout",
        str(NODE_TIMEOUT_MS),
        "--save",
        "",
        "--appendonly",
        "no",
    ]


@pytest.fixture(scope="session")
def replicated_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ReplicatedCluster]:
    cli = _require("redis-cli")
    base = tmp_path_factory.mktemp("replicated-cluster")
    # Every node is a startup node, so clients still find the cluster whichever one is down.
    cluster = ReplicatedCluster("redis+cluster://" + ",".join(f"127.0.0.1:{p}" for p in REPLICATED_PORTS), base)
    try:
        for port in REPLICATED_PORTS:
            cluster.processes[port] = _start(cluster.started, _cluster_node_args(), base / str(port), port)
        created = subprocess.run(
            [cli, "--cluster", "create", *[f"127.0.0.1:{p}" for p in REPLICATED_PORTS], "--cluster-replicas", "1",
             "--cluster-yes"],
            capture_output=True,
            text=True,
            timeout=60,
        )  # fmt: skip
        assert created.returncode == 0, f"redis-cli --cluster create failed:\n{created.stdout}\n{created.stderr}"
        wait_for(cluster.healthy, timeout=60, interval=0.1, what="three masters, each with a replica in sync")
        yield cluster
    finally:
        for proc in cluster.started:
            stop(proc)


# -- Sentinel ---------------------------------------------------------------------------------------------------


@dataclass
class SentinelTopology:
    url: str
    base: Path
    processes: dict[int, subprocess.Popen] = field(default_factory=dict)  # the current one on each port
    started: list[subprocess.Popen] = field(default_factory=list)  # all, for the teardown

    def kill_master(self) -> int:
        """SIGKILL the current master; returns its port."""
        port = self.master_port()
        stop(self.processes[port])
        return port

    def ensure_replica(self) -> None:
        """Start the data server a failover left dead again, as a replica of the current master, and wait until
        it is in sync and every sentinel counts it as a healthy replica (a failover candidate)."""
        master = self.master_port()
        for port in (MASTER_PORT, REPLICA_PORT):
            if self.processes[port].poll() is not None:
                self.processes[port] = _start(
                    self.started,
                    [
                        _require("redis-server"),
                        "--save",
                        "",
                        "--appendonly",
                        "no",
                        "--replicaof",
                        "127.0.0.1",
                        str(master),
                    ],
                    self.base / f"{port}-again",
                    port,
                )
        wait_for(lambda: _sentinels_ready(self), timeout=30, interval=0.1, what="the replica back in every sentinel")

    def sentinel(self) -> redis.Redis:
        return redis.Redis(port=SENTINEL_PORTS[0], socket_connect_timeout=1, socket_timeout=2)

    def master_port(self) -> int:
        probe = self.sentinel()
        try:
            _, port = probe.execute_command("SENTINEL", "GET-MASTER-ADDR-BY-NAME", SERVICE)
            return int(port)
        finally:
            probe.close()


SENTINEL_CONF = """port {port}
bind 127.0.0.1
dir {dir}
logfile {dir}/sentinel.log
sentinel monitor {service} 127.0.0.1 {master} 2
sentinel down-after-milliseconds {service} 1000
sentinel failover-timeout {service} 5000
sentinel parallel-syncs {service} 1
"""


@pytest.fixture(scope="session")
def sentinel_topology(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SentinelTopology]:
    server, sentinel = _require("redis-server"), _require("redis-sentinel")
    base = tmp_path_factory.mktemp("sentinel")
    topo = SentinelTopology(f"redis+sentinel://{','.join(f'127.0.0.1:{p}' for p in SENTINEL_PORTS)}/{SERVICE}/0", base)
    started = topo.started
    try:
        data = [server, "--save", "", "--appendonly", "no"]
        topo.processes[MASTER_PORT] = _start(started, data, base / str(MASTER_PORT), MASTER_PORT)
        topo.processes[REPLICA_PORT] = _start(
            started, data + ["--replicaof", "127.0.0.1", str(MASTER_PORT)], base / str(REPLICA_PORT), REPLICA_PORT
        )
        for port in SENTINEL_PORTS:
            workdir = base / str(port)
            workdir.mkdir()
            conf = workdir / "sentinel.conf"  # sentinels rewrite their config: each needs its own, writable
            conf.write_text(SENTINEL_CONF.format(port=port, dir=workdir, service=SERVICE, master=MASTER_PORT))
            proc = subprocess.Popen([sentinel, str(conf)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            started.append(proc)
            topo.processes[port] = proc
        wait_for(
            lambda: _sentinels_ready(topo),
            timeout=30,
            interval=0.1,
            what="every sentinel seeing the replica and the two other sentinels",
        )
        yield topo
    finally:
        for proc in started:
            stop(proc)


def _sentinels_ready(topo: SentinelTopology) -> bool:
    for port in SENTINEL_PORTS:
        for proc in topo.processes.values():
            assert proc.poll() is None, f"a server exited:\n{_logs(topo.base)}"
        probe = redis.Redis(port=port, socket_connect_timeout=0.5, socket_timeout=1, decode_responses=True)
        try:
            master = probe.sentinel_master(SERVICE)
            healthy = [
                r
                for r in probe.sentinel_slaves(SERVICE)
                if "down" not in str(r.get("flags")) and r.get("master-link-status") == "ok"
            ]
            if not healthy or int(master["num-other-sentinels"]) < 2:
                return False
        except redis.RedisError:
            return False
        finally:
            probe.close()
    return True


def _logs(base: Path) -> str:
    return "\n".join(f"--- {p}\n{p.read_text(errors='replace')[-1500:]}" for p in sorted(base.rglob("*.log")))


# -- workers ----------------------------------------------------------------------------------------------------


@pytest.fixture
def topology_worker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., subprocess.Popen]]:
    """``start(url, queues, concurrency=4)`` runs a taskworker on ``url`` serving ``queues`` (the worker suite's
    short intervals); its handlers append what they complete to ``tmp_path / DONE_FILE`` (see ``completions``)."""
    monkeypatch.setenv(DONE_FILE_ENV, str(tmp_path / DONE_FILE))  # the worker's environment is a copy of ours
    workers: list[subprocess.Popen] = []

    def start(url: str, queues: str, concurrency: int = 4) -> subprocess.Popen:
        return start_taskworker(
            workers,
            url,
            tmp_path / f"worker-{len(workers)}.log",
            "--queues",
            queues,
            "--concurrency",
            str(concurrency),
            "--import",
            TASKS_MODULE,
        )

    yield start
    for proc in workers:
        kill_process(proc)


def completions(tmp_path: Path) -> list[str]:
    """Task ids in the order their handlers completed (an id twice: it ran to the end twice)."""
    path = tmp_path / DONE_FILE
    return [line.split()[1] for line in path.read_text().splitlines()] if path.exists() else []


def first_completion_of(tmp_path: Path, ids: set[str]) -> float:
    """When (epoch) the first of ``ids`` was completed."""
    rows = [line.split() for line in (tmp_path / DONE_FILE).read_text().splitlines()]
    return min(float(at) for _, task_id, at in rows if task_id in ids)


def worker_logs(tmp_path: Path) -> str:
    return "\n".join(f"--- {p.name}\n{p.read_text(errors='replace')[-3000:]}" for p in sorted(tmp_path.glob("*.log")))


@dataclass
class Outcomes:
    """What became of a failover test's acknowledged enqueues once every queue drained."""

    runs: Counter[str]  # task id -> how many times its handler ran to the end
    completed: set[str]  # acknowledged and run
    present: set[str]  # acknowledged, not run, still stored
    lost: set[str]  # acknowledged, then neither run nor stored


def drained_outcomes(
    inspector: Inspector, queues: list[str], acknowledged: Iterable[str], tmp_path: Path, timeout: float
) -> Outcomes:
    """Wait until no queue holds pending, active, scheduled or retrying tasks, then account for each enqueue."""
    acked = set(acknowledged)

    def settled() -> bool:
        return all((i.pending, i.active, i.scheduled, i.retry) == (0, 0, 0, 0) for i in inspector.queue_infos(queues))

    wait_for(settled, timeout=timeout, interval=0.2, what=f"every queue drained\n{worker_logs(tmp_path)}")
    runs = Counter(completions(tmp_path))
    completed = set(runs) & acked
    present = {t for t in acked - completed if task_exists(inspector, queues, t)}
    return Outcomes(runs, completed, present, acked - completed - present)


def record_failover(title: str, figures: dict[str, Any]) -> None:
    """Print a failover's figures, and append them (a JSON line) to the file $TOPOLOGY_FIGURES names, for
    docs/reliability.md; a plain test run writes nothing."""
    print(f"\n{title}: {figures}")
    if os.environ.get(FIGURES_ENV):
        with open(os.environ[FIGURES_ENV], "a") as out:
            out.write(json.dumps(figures) + "\n")
