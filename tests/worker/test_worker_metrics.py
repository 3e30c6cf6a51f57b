"""The worker's own metrics port: run-time histograms by queue and type, tasks in flight, fetch latency, and the
lease fence's counters (acknowledgements refused, outcomes abandoned, leases expired); also in prometheus_client's
multi-process mode, in a real worker process."""

from __future__ import annotations

import time
import urllib.request
from pathlib import Path

from prometheus_client.mmap_dict import MmapedDict, mmap_key
from prometheus_client.parser import text_string_to_metric_families
from worker_support import FAST, start_taskworker, state_of, wait_for

from taskq.queues.engine import FakeClock, Registry, Task, handler
from tests.chaos.chaos_support import ChaosProxy
from tests.ports import free_port
from taskq.worker.config import WorkerConfig
from taskq.worker.metrics import WorkerMetrics
from taskq.worker.server import Server

REPO = Path(__file__).resolve().parents[2]
PROXY_PORTS = range(18101, 18110)  # the proxy between the fenced worker and Redis
LEASE_COUNTERS = (
    "taskq_worker_acks_refused_total",
    "taskq_worker_outcomes_abandoned_total",
    "taskq_worker_leases_expired_total",
)


def samples(url: str) -> dict[str, dict[tuple, float]]:
    text = urllib.request.urlopen(url, timeout=5).read().decode()
    out: dict[str, dict[tuple, float]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out.setdefault(sample.name, {})[tuple(sorted(sample.labels.items()))] = sample.value
    return out


def test_worker_exports_run_times_in_flight_and_fetch_latency(make_server, registry, client):
    @handler("metrics:ok", registry=registry)
    def ok(task):
        pass

    @handler("metrics:bad", registry=registry)
    def bad(task):
        raise RuntimeError("no")

    server = make_server(metrics_port=0, metrics_host="127.0.0.1")
    url = f"http://127.0.0.1:{server.metrics_server.server_address[1]}/metrics"
    client.enqueue_many([("metrics:ok", b"")] * 5 + [("metrics:bad", b"")] * 2)
    key_ok = (("outcome", "success"), ("queue", "default"), ("type", "metrics:ok"))
    key_bad = (("outcome", "failure"), ("queue", "default"), ("type", "metrics:bad"))
    wait_for(
        lambda: samples(url).get("taskq_task_runtime_seconds_count", {}).get(key_bad) == 2, what="failed runs counted"
    )
    series = samples(url)
    assert series["taskq_task_runtime_seconds_count"][key_ok] == 5
    assert series["taskq_task_runtime_seconds_bucket"][tuple(sorted(key_ok + (("le", "+Inf"),)))] == 5
    assert series["taskq_worker_tasks_in_flight"][(("queue", "default"),)] == 0
    assert series["taskq_worker_fetch_latency_seconds_count"][()] >= 1


def test_multiprocess_mode_in_a_real_worker_process(tmp_path, redis_url, r, client, processes):
    port = free_port(range(19100, 19300))
    start_taskworker(
        processes,
        redis_url,
        tmp_path / "worker.log",
        *("--queues", "default", "--metrics-port", str(port), "--metrics-host", "127.0.0.1"),
        *("--import", "tests.worker.crash_tasks"),
        PROMETHEUS_MULTIPROC_DIR=str(tmp_path),
    )
    url = f"http://127.0.0.1:{port}/metrics"

    def served() -> bool:
        try:
            return "taskq_worker_fetch_latency_seconds_count" in samples(url)
        except OSError:
            return False

    wait_for(served, what="the worker's metrics port")
    assert list(tmp_path.glob("*.db")), "values are kept in the multi-process folder"
    client.enqueue("test:record")
    wait_for(lambda: lease_counters(url) == (0, 0, 0), what="the lease counters of the queue, at 0")


def test_a_scrape_skips_a_value_file_another_process_is_still_creating(tmp_path, monkeypatch):
    # A process creates its file (empty) before growing it to size; a scrape in between must not answer 500.
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path))
    written = MmapedDict(str(tmp_path / "counter_101.db"))
    written.write_value(
        mmap_key("taskq_worker_acks_refused", "taskq_worker_acks_refused_total", ["queue"], ["default"], "Refused."),
        3.0,
        0.0,
    )
    written.close()
    (tmp_path / "counter_102.db").touch()
    server = WorkerMetrics().serve(0, "127.0.0.1")
    try:
        series = samples(f"http://127.0.0.1:{server.server_address[1]}/metrics")
        assert series["taskq_worker_acks_refused_total"][(("queue", "default"),)] == 3.0
    finally:
        server.shutdown()
        server.server_close()


def lease_counters(url: str, queue: str = "default") -> tuple[float | None, ...]:
    series = samples(url)
    return tuple(series.get(name, {}).get((("queue", queue),)) for name in LEASE_COUNTERS)


class Holder:
    """A handler whose attempts hold until the test releases their task or the worker cancels them."""

    def __init__(self, registry: Registry) -> None:
        self.started: list[str] = []
        self.released: set[str] = set()
        handler("metrics:hold", registry=registry)(self.run)

    def run(self, task: Task) -> None:
        self.started.append(task.id)
        deadline = time.monotonic() + 20
        while task.id not in self.released and not task.cancelled and time.monotonic() < deadline:
            time.sleep(0.01)

    def release(self, task_id: str) -> None:
        self.released.add(task_id)


def test_the_lease_fence_counters_count_refused_abandoned_and_expired(
    redis_client, redis_url, client, inspector, clock: FakeClock
):
    """One worker, talking to Redis through a proxy the test cuts, under the engine's FakeClock: its leases run out
    while Redis is away (the running attempt is stopped, the finished one's outcome abandoned), then a lease is
    recovered under a running attempt (its late success is refused). Each shows on the metrics port."""
    kwargs = redis_client.connection_pool.connection_kwargs
    proxy = ChaosProxy(kwargs["host"], int(kwargs.get("port", 6379)), ports=PROXY_PORTS)
    proxy.start()
    registry = Registry()
    holder = Holder(registry)
    config = WorkerConfig(
        redis_url=proxy.url(int(kwargs.get("db") or 0)),
        **{**FAST, "concurrency": 2, "metrics_port": 0, "metrics_host": "127.0.0.1"},
    )
    server = Server(config, registry, clock=clock)
    server.start()
    url = f"http://127.0.0.1:{server.metrics_server.server_address[1]}/metrics"
    try:
        finished, running = (client.enqueue("metrics:hold", max_retry=0).id for _ in range(2))
        wait_for(lambda: len(holder.started) == 2, what="both attempts running")
        assert lease_counters(url) == (0, 0, 0), "exported at 0 from the queue's first attempt on"

        # Redis goes away: one attempt finishes (its outcome waits in the syncer), the other keeps running.
        proxy.reset()
        holder.release(finished)
        wait_for(lambda: server.acker.drain(0), what="the outcome handed to the syncer")
        clock.advance(2.1)  # past both leases, which nobody could extend
        wait_for(lambda: lease_counters(url) == (0, 1, 1), what="one outcome abandoned and one lease expired")
        assert (server.acker.abandoned, server.processor.leases_expired) == (1, 1)

        proxy.heal()
        clock.advance(0.5)  # past lease + skew: the recoverer archives both (no retries left)
        wait_for(
            lambda: {state_of(inspector, "default", i) for i in (finished, running)} == {"archived"},
            what="both recovered",
        )

        # A lease recovered under a running attempt whose worker noticed nothing (heartbeat and watchdog stopped,
        # as in a long pause): its late success reaches Redis and the fence refuses it.
        server.heartbeat.stop()
        server.watchdog.stop()
        stale = client.enqueue("metrics:hold", max_retry=0).id
        wait_for(lambda: stale in holder.started, what="the third attempt running")
        clock.advance(2.5)
        wait_for(lambda: state_of(inspector, "default", stale) == "archived", what="its lease recovered")
        holder.release(stale)
        wait_for(lambda: lease_counters(url) == (1, 1, 1), what="the stale acknowledgement refused")
        assert server.acker.refused == 1
        assert state_of(inspector, "default", stale) == "archived"
    finally:
        holder.released.update(holder.started)
        server.stop()
        proxy.stop()
