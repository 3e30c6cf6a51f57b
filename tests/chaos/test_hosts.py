"""Workers on separate hosts: a Redis host and two worker hosts, each a Linux network namespace made by the test,
joined only by veth pairs (tests/chaos/netns.py). The worker processes run inside their hosts' namespaces and reach
Redis over their own links; the test reads Redis through a unix socket, which no cut or loss touches.

- A host drops off the network (its link goes down while it runs tasks): the other host runs its tasks once their
  leases expire, nothing is lost, and when the link comes back the first host's late acknowledgements are refused
  by the fence.
- A host's path to Redis is slow and lossy (0.1-0.3 s each way through the chaos proxy, run in the Redis host's
  namespace, and 5 % of its packets dropped by nftables): every task still runs, none is lost.

The worker tests' short leases (2 s, see worker_support.worker_env) keep the suite fast; the lossy path runs with
the lease and heartbeat docs/operations.md recommends for such links (LOSSY_LEASE)."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from chaos_support import ChaosProxy, completions, kill_process, logs, record_figures, scale, start_worker, wait_for

from taskq.queues.engine import Client, Inspector
from taskq.queues.engine.inspector import ServerInfo
from tests.chaos import netns
from tests.topology.topology_support import answers

pytestmark = pytest.mark.chaos

QUEUE = "hosts"
TASK = "chaos:record"
REDIS_PORT = 6379  # inside the Redis host's namespace: its own network stack, not the machine's 6379
PROXY_PORT = 6380
# Redis answers other hosts only with a password (protected mode refuses them otherwise), as in a real deployment.
PASSWORD = "hosts-secret"
REFUSED = "acknowledgement refused"
# A lease that a path of 0.1-0.3 s each way with 5 % packet loss keeps alive: extended every lease/6 (2 s), each
# extension a round trip of up to 0.6 s plus TCP's retransmissions (200 ms, then doubling) when a packet is lost.
LOSSY_LEASE = "12"


def _skip_reason() -> str | None:
    return netns.unavailable()


@pytest.fixture
def network(tmp_path: Path) -> Iterator[netns.HostNetwork]:
    reason = _skip_reason()
    if reason:
        pytest.skip(f"cannot make network namespaces here: {reason}")
    net = netns.HostNetwork(["a", "b"])
    try:
        net.create()
        yield net
    finally:
        net.destroy()


class RedisHost:
    """A redis-server in the Redis host's namespace, listening on its end of every link and on a unix socket."""

    def __init__(self, net: netns.HostNetwork, data: Path) -> None:
        data.mkdir(parents=True, exist_ok=True)
        self.socket = data / "redis.sock"
        self.log = data / "redis.log"
        self.proc = subprocess.Popen(
            [
                *net.exec_prefix(net.redis_namespace),
                "redis-server",
                "--port",
                str(REDIS_PORT),
                "--bind",
                *net.redis_addresses(),
                "127.0.0.1",
                "--unixsocket",
                str(self.socket),
                "--requirepass",
                PASSWORD,
                "--unixsocketperm",
                "700",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(data),
                "--logfile",
                str(self.log),
                "--daemonize",
                "no",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        self.url = f"unix://{self.socket}?db=0&password={PASSWORD}"
        wait_for(self._answers, interval=0.05, what="redis-server in the Redis host's namespace")

    def _answers(self) -> bool:
        assert self.proc.poll() is None, f"redis-server exited:\n{self.log.read_text(errors='replace')[-2000:]}"
        return answers(redis.Redis(unix_socket_path=str(self.socket), password=PASSWORD, socket_connect_timeout=0.5))

    def stop(self) -> None:
        kill_process(self.proc)


@pytest.fixture
def redis_host(network: netns.HostNetwork, tmp_path: Path) -> Iterator[RedisHost]:
    server = RedisHost(network, tmp_path / "redis")
    yield server
    server.stop()


def start_host_worker(
    net: netns.HostNetwork, name: str, url: str, tmp_path: Path, processes: list[subprocess.Popen], **env: str
) -> subprocess.Popen:
    proc = start_worker(
        url,
        QUEUE,
        tmp_path / "done.txt",
        tmp_path / f"worker-{name}.log",
        concurrency=4,
        prefix=net.exec_prefix(net.hosts[name].namespace),
        **env,
    )
    processes.append(proc)
    return proc


def redis_url(address: str, port: int) -> str:
    return f"redis://:{PASSWORD}@{address}:{port}/0"


def server_of(inspector: Inspector, proc: subprocess.Popen) -> ServerInfo | None:
    assert proc.poll() is None, f"worker {proc.pid} exited with {proc.returncode}"
    return next((s for s in inspector.servers() if s.pid == proc.pid), None)


def accepted_outcomes(inspector: Inspector, procs: list[subprocess.Popen]) -> int:
    """The outcomes the fence accepted from these workers, as their heartbeats last published them."""
    return sum(server.processed for server in (server_of(inspector, proc) for proc in procs) if server)


def drained(inspector: Inspector) -> bool:
    info = inspector.queue_info(QUEUE)
    return (info.pending, info.active, info.scheduled, info.retry, info.archived) == (0, 0, 0, 0, 0)


def test_a_host_cut_off_the_network_loses_nothing(network, redis_host, processes, tmp_path: Path):
    host_a, host_b = network.hosts["a"], network.hosts["b"]
    inspector, client = Inspector(redis_host.url), Client(redis_host.url)
    try:
        # Host a's reads wait out the cut (redis-py gives up after 5 s by default), so what it sent just before the
        # cut is answered once the link is back, with the fence's refusal; host b keeps the default. The cut lasts
        # until host b has run every task (seconds here, half a minute with bench/chaos_figures.py's counts), and
        # TCP retransmits with doubling pauses, so the reply may come up to twice the cut's length after it began.
        url_a = redis_url(host_a.redis_address, REDIS_PORT) + "?socket_timeout=120"
        worker_a = start_host_worker(network, "a", url_a, tmp_path, processes)
        worker_b = start_host_worker(network, "b", redis_url(host_b.redis_address, REDIS_PORT), tmp_path, processes)
        for proc in (worker_a, worker_b):
            wait_for(lambda p=proc: server_of(inspector, p), what=f"worker {proc.pid}'s heartbeat\n{logs(tmp_path)}")
        count = scale(120)
        ids = {client.enqueue(TASK, {"sleep": 0.2}, queue=QUEUE).id for _ in range(count)}

        def a_is_running_tasks() -> list[str]:
            server = server_of(inspector, worker_a)
            return [task["id"] for task in server.active] if server else []

        held = wait_for(a_is_running_tasks, what=f"host a running tasks\n{logs(tmp_path)}")
        network.cut(host_a)
        cut_at = time.monotonic()
        # Host b runs everything, host a's tasks too once their leases expire; host a is still cut off.
        wait_for(lambda: ids <= set(completions(tmp_path / "done.txt")) and drained(inspector), timeout=90,
                 what=f"host b to run every task\n{logs(tmp_path)}")  # fmt: skip
        recovered_after = time.monotonic() - cut_at
        network.restore(host_a)
        # What host a sent while cut off reaches Redis now, and the fence refuses it: another attempt ran the task.
        wait_for(lambda: REFUSED in (tmp_path / "worker-a.log").read_text(errors="replace"), timeout=100,
                 what=f"host a's late acknowledgements to be refused\n{logs(tmp_path)}")  # fmt: skip
        runs = completions(tmp_path / "done.txt")
        assert set(runs) == ids, f"{len(ids - set(runs))} task(s) never ran"
        assert set(held) <= ids
        assert drained(inspector)
        assert worker_a.poll() is None and worker_b.poll() is None, "a worker died instead of riding the cut out"
        # Some tasks ran twice (host a finished them but could not say so), yet each outcome was taken once: the
        # outcomes the two hosts had accepted add up to the tasks, the refused ones counted in neither.
        wait_for(lambda: accepted_outcomes(inspector, [worker_a, worker_b]) == count,
                 what=f"the hosts' heartbeats to count {count} accepted outcomes")  # fmt: skip
        record_figures(
            "worker host's link down (one of two hosts, namespaces)",
            enqueued=count,
            completed=len(runs),
            lost=count - len(runs),
            duplicated=sum(runs.values()) - len(runs),
            held_at_cut=len(held),
            recovery_s=round(recovered_after, 2),
            stale_acks_refused=(tmp_path / "worker-a.log").read_text(errors="replace").count(REFUSED),
        )
    finally:
        client.close()
        inspector.broker.close()


@pytest.mark.parametrize("lease", [LOSSY_LEASE, "2"], ids=["recommended-lease", "short-lease"])
def test_a_slow_lossy_path_to_redis_loses_nothing(network, redis_host, processes, tmp_path: Path, lease: str):
    """Nothing is lost with either lease. With the short one, an extension that TCP's retransmissions hold past
    the lease would let the other host take the task over (a duplicate and a refused acknowledgement); the figures
    (docs/reliability.md) count how often that happened."""
    host_a, host_b = network.hosts["a"], network.hosts["b"]
    # The proxy runs on the Redis host's side of host a's link: host a's traffic is delayed in the Redis host.
    proxy = ChaosProxy("127.0.0.1", REDIS_PORT, namespace=network.redis_namespace, listen_host=host_a.redis_address)
    proxy.port = PROXY_PORT
    proxy.start()
    inspector, client = Inspector(redis_host.url), Client(redis_host.url)
    try:
        proxy.delay(0.1, jitter=0.2)
        network.lose(host_a, 5)
        lease_env = {"TASKS_LEASE_SECONDS": lease}
        worker_a = start_host_worker(network, "a", redis_url(host_a.redis_address, PROXY_PORT), tmp_path, processes,
                                     **lease_env)  # fmt: skip
        worker_b = start_host_worker(network, "b", redis_url(host_b.redis_address, REDIS_PORT), tmp_path, processes,
                                     **lease_env)  # fmt: skip
        for proc in (worker_a, worker_b):
            wait_for(lambda p=proc: server_of(inspector, p), timeout=60,
                     what=f"worker {proc.pid}'s heartbeat\n{logs(tmp_path)}")  # fmt: skip
        # Tasks long enough that the healthy host cannot drain the queue before the slow one fetches its share.
        count = scale(80)
        started = time.monotonic()
        ids = {client.enqueue(TASK, {"sleep": 0.3}, queue=QUEUE).id for _ in range(count)}
        wait_for(lambda: ids <= set(completions(tmp_path / "done.txt")) and drained(inspector), timeout=120,
                 what=f"every task to run\n{logs(tmp_path)}")  # fmt: skip
        runs = completions(tmp_path / "done.txt")
        assert set(runs) == ids
        assert worker_a.poll() is None and worker_b.poll() is None
        seconds = time.monotonic() - started
        wait_for(lambda: accepted_outcomes(inspector, [worker_a, worker_b]) == count, timeout=30,
                 what=f"the hosts' heartbeats to count {count} accepted outcomes")  # fmt: skip
        server_a = server_of(inspector, worker_a)
        assert server_a is not None and server_a.processed > 0, "the host on the lossy path ran nothing"
        record_figures(
            f"worker host on a 0.1-0.3 s, 5 % loss path (lease {lease} s)",
            enqueued=count,
            completed=len(runs),
            lost=count - len(runs),
            duplicated=sum(runs.values()) - len(runs),
            run_by_slow_host=server_a.processed,
            drain_s=round(seconds, 2),
            stale_acks_refused=(tmp_path / "worker-a.log").read_text(errors="replace").count(REFUSED),
        )
    finally:
        for proc in processes:  # before the proxy, so its loop closes no connection still in use
            kill_process(proc)
        client.close()
        inspector.broker.close()
        proxy.stop()
