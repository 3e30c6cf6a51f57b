"""Redis Cluster failover under load: three masters and three replicas on loopback, a master SIGKILLed while a
producer enqueues into queues spread over the three masters and two worker processes run them.

Nobody restarts anything but the dead node (as systemd would): the replica is promoted after
``cluster-node-timeout``, and the producer, the workers, the console, its live socket and ``/metrics`` follow the
new slot map by themselves (redis-py's cluster client refreshes it on MOVED and on connection errors; taskq's
loops retry with backoff on what is still refused, CLUSTERDOWN included).

Counted, as for Sentinel (tests/topology/test_sentinel.py, docs/reliability.md): enqueues acknowledged then lost,
tasks run twice, and how long until the queue on the killed master took enqueues and ran tasks again. With
``wait_replicas=1`` in the producer's URL, an enqueue is acknowledged only once the slot's replica has it, so the
promoted replica holds every acknowledged task: none may be lost.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from topology_support import ReplicatedCluster, drained_outcomes, first_completion_of, record_failover, worker_logs

from taskq.console.channel_layers import channel_layers
from taskq.queues import handles
from taskq.queues.engine import Client, Inspector, Keys, RedisUnavailableError, TaskIdConflictError
from tests.console.console_support import logged_in, make_user
from tests.live.live_support import open_socket, session_cookie, stop_hub
from tests.waiting import wait_for

pytestmark = [pytest.mark.chaos, pytest.mark.timeout(300)]

TASKS = 600
KILL_AT = 200  # the master of the first queue is killed once this many enqueues were acknowledged
PAGES = ["/", "/queues/{queue}/", "/metrics"]
LIVE_FIGURES = ("size", "pending", "active", "retry", "processed_total", "failed_total")


def spread_queues(cluster: ReplicatedCluster) -> list[str]:
    """Three queue names whose keys live on three different masters."""
    keys, by_master = Keys(cluster=True), {}
    for n in range(64):
        name = f"fo{n}"
        by_master.setdefault(cluster.master_of(keys.queue(name).pending), name)
        if len(by_master) == 3:
            return sorted(by_master.values())
    raise AssertionError("64 queue names did not reach three masters")


@dataclass
class Run:
    acknowledged: dict[str, float] = field(default_factory=dict)  # id -> when enqueue returned (epoch)
    unacknowledged: set[str] = field(default_factory=set)  # a retry met TaskIdConflictError: landed, unconfirmed
    killed: int = 0  # the port of the master killed
    killed_at: float = 0.0
    back_at: float = 0.0  # the first acknowledgement on the killed master's queue after the kill
    promoted_at: float = 0.0  # when a live node first named the replica as the slot's master
    done: threading.Event = field(default_factory=threading.Event)
    error: BaseException | None = None


def produce(client: Client, cluster: ReplicatedCluster, queues: list[str], run: Run) -> None:
    """Enqueue TASKS tasks round-robin over ``queues``, each retried until acknowledged or found there; SIGKILL
    the master of ``queues[0]`` before task KILL_AT, and start it again once its replica was promoted."""
    try:
        victim_key = Keys(cluster=True).queue(queues[0]).pending
        for n in range(TASKS):
            task_id, queue = f"c{n:05d}", queues[n % len(queues)]
            if n == KILL_AT:
                run.killed = cluster.master_of(victim_key)
                run.killed_at = time.time()
                cluster.kill(run.killed)
                restarter = threading.Thread(target=restart_after_promotion, args=(cluster, victim_key, run))
                restarter.start()
            give_up = time.monotonic() + 60
            while True:
                try:
                    client.enqueue("topo:record", {}, queue=queue, task_id=task_id)
                    run.acknowledged[task_id] = time.time()
                    break
                except TaskIdConflictError:
                    run.unacknowledged.add(task_id)
                    break
                except RedisUnavailableError:
                    assert time.monotonic() < give_up, "no master for the slot within 60 s"
                    time.sleep(0.05)
            if n >= KILL_AT and queue == queues[0] and not run.back_at:
                run.back_at = run.acknowledged.get(task_id, time.time())
        restarter.join(60)
    except BaseException as exc:  # handed to the test's thread
        run.error = exc
    finally:
        run.done.set()


def restart_after_promotion(cluster: ReplicatedCluster, key: str, run: Run) -> None:
    """Start the killed node again once its replica took its slots, as systemd would; it rejoins as a replica
    (with wait_replicas, the slot's new master takes no acknowledged write until it has one again)."""
    wait_for(lambda: cluster.master_of(key) != run.killed, timeout=30, interval=0.05, what="a replica promoted")
    run.promoted_at = time.time()
    cluster.restart(run.killed)


class LiveProbe(threading.Thread):
    """A live-console socket on the queue page of the killed master's queue, in an event loop (and so a live
    hub) of its own, collecting what it is sent until stopped. Like the page, it opens a new socket when the
    server closes one (a hub that cannot read Redis tells its pages to retry), and counts those reconnections."""

    def __init__(self, cookie: str, queue: str) -> None:
        super().__init__(name="live-probe", daemon=True)
        self.cookie, self.queue = cookie, queue
        self.messages: list[tuple[float, dict]] = []
        self.reconnections = 0
        self.subscribed = threading.Event()
        self.stopping = threading.Event()
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            asyncio.run(self._listen())
        except BaseException as exc:  # handed to the test's thread
            self.error = exc
            self.subscribed.set()

    async def _listen(self) -> None:
        try:
            while not self.stopping.is_set():
                socket, connected = await open_socket(self.cookie)
                assert connected, "the live socket was refused"
                await socket.send_json_to({"op": "subscribe", "scope": "queue", "queue": self.queue})
                self.subscribed.set()
                if await self._receive(socket):
                    self.reconnections += 1
                    await asyncio.sleep(0.5)  # the page's own pause before it tries again
        finally:
            await stop_hub()

    async def _receive(self, socket) -> bool:
        """Collect messages until stopped (False) or until the server closes the socket (True)."""
        try:
            while not self.stopping.is_set():
                # receive_nothing waits without cancelling the consumer, which a timed-out receive would do
                if await socket.receive_nothing(timeout=0.2):
                    continue
                output = await socket.receive_output(timeout=10)
                if output["type"] == "websocket.close":
                    return True
                self.messages.append((time.time(), json.loads(output["text"])))
            return False
        finally:
            await socket.disconnect()


def read_pages(browser, queue: str, answers: list[tuple[float, str, int]]) -> None:
    """Every console page of ``queue`` once, as an operator reads them: (when, page, status) onto ``answers``."""
    for page in PAGES:
        answers.append((time.time(), page, browser.get(page.format(queue=queue)).status_code))


def live_counts_agree(probe: LiveProbe, inspector: Inspector, queue: str, since: float) -> bool:
    sent = [
        message["queues"][queue] for at, message in probe.messages if at >= since and queue in message.get("queues", {})
    ]
    fresh = inspector.queue_infos([queue])[0].live_counts()
    return bool(sent) and {k: sent[-1].get(k) for k in LIVE_FIGURES} == {k: fresh[k] for k in LIVE_FIGURES}


@pytest.mark.parametrize("wait_replicas", [0, 1], ids=["async-replication", "wait_replicas=1"])
def test_cluster_failover_under_load(
    replicated_cluster: ReplicatedCluster, topology_worker, tmp_path: Path, settings, transactional_db, wait_replicas
):
    cluster = replicated_cluster
    cluster.ensure_healthy()  # the previous case's failover left a node to rejoin
    cluster.flush()
    url = cluster.url
    queues = spread_queues(cluster)
    settings.REDIS_URL = url
    settings.CHANNEL_LAYERS = channel_layers(url)
    handles.reset()
    producer_url = f"{url}?wait_replicas={wait_replicas}" if wait_replicas else url
    client, inspector = Client(producer_url), Inspector(url)
    browser = logged_in(make_user("ops", "view_console"))
    probe = LiveProbe(session_cookie(make_user("vera", "view_console")), queues[0])
    try:
        for _ in range(2):
            topology_worker(url, ",".join(queues), concurrency=8)
        wait_for(lambda: len(inspector.servers()) == 2, timeout=30, what=f"two workers\n{worker_logs(tmp_path)}")
        probe.start()
        assert probe.subscribed.wait(30) and probe.error is None, probe.error

        run = Run()
        threading.Thread(target=produce, args=(client, cluster, queues, run), daemon=True).start()
        # The console is read as an operator would, every quarter second, all through the failover.
        answers: list[tuple[float, str, int]] = []
        while not run.done.is_set():
            read_pages(browser, queues[0], answers)
            time.sleep(0.25)
        assert run.error is None, f"the producer failed: {run.error!r}"

        acknowledged = run.acknowledged
        out = drained_outcomes(inspector, queues, acknowledged, tmp_path, timeout=60)
        after_kill = {t for t, at in acknowledged.items() if at >= run.back_at}
        on_victim_after = {t for t in after_kill if int(t[1:]) % len(queues) == 0}  # queues[0]'s tasks
        # The live socket followed the killed master's queue after the failover: once the queues settled, the last
        # counts it was sent are what a fresh read of Redis finds.
        wait_for(lambda: live_counts_agree(probe, inspector, queues[0], since=run.back_at), timeout=30,
                 what="the live page's counts to equal a fresh read after the failover")  # fmt: skip
        read_pages(browser, queues[0], answers)

        failed_answers = [(round(at - run.killed_at, 2), page, code) for at, page, code in answers if code != 200]
        figures = {
            "topology": "cluster",
            "wait_replicas": wait_replicas,
            "enqueued": TASKS,
            "acknowledged": len(acknowledged),
            "completed": len(out.completed),
            "lost": len(out.lost),
            "left_in_redis": len(out.present),
            "unacknowledged": len(run.unacknowledged),
            "duplicated": sum(1 for n in out.runs.values() if n > 1),
            "promotion_seconds": round(run.promoted_at - run.killed_at, 2),
            "enqueue_recovery_seconds": round(run.back_at - run.killed_at, 2),
            "processing_recovery_seconds": round(first_completion_of(tmp_path, on_victim_after) - run.killed_at, 2),
            "console_answers": len(answers),
            "console_not_200": len(failed_answers),
            "live_messages": len(probe.messages),
            "live_reconnections": probe.reconnections,
        }
        record_failover(f"Redis Cluster failover (console answers other than 200: {failed_answers})", figures)

        # The system went on by itself: every enqueue after the failover was acknowledged and ran.
        assert after_kill <= out.completed, f"{len(after_kill - out.completed)} post-failover tasks never ran"
        # A loss is possible only for writes acknowledged before the kill, and never once the replica confirmed them.
        assert all(acknowledged[t] <= run.killed_at for t in out.lost)
        if wait_replicas:
            assert not out.lost, f"acknowledged after WAIT, yet lost: {sorted(out.lost)[:10]}"
        # The console never failed: while the slot had no master it said so (503), and it answers 200 again after.
        assert {code for *_, code in failed_answers} <= {503}, failed_answers
        assert all(code == 200 for at, _, code in answers if at > run.back_at + 5), failed_answers
        cluster.ensure_healthy()  # the killed master is back, as a replica of the node that took its slots
        assert cluster.master_of(Keys(cluster=True).queue(queues[0]).pending) != run.killed
    finally:
        probe.stopping.set()
        probe.join(15)
        client.close()
        inspector.broker.close()
        handles.reset()
