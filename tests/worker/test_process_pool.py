"""The process pool (``--pool process``) end to end against the real Redis, with real child processes: results,
failures, timeouts and cancels that stop a CPU-bound child for real (it is replaced), children that die, the
lease fence on a child's late write, max tasks per child, shutdown and metrics. The handlers live in
process_tasks.py, which each child imports. Time is the shared FakeClock; nothing is timed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import process_tasks
import pytest
import redis
from process_tasks import payload
from worker_support import FAST, listening_for_cancels, state_of, wait_for, worker_env

from taskq.queues.engine import Client, FakeClock, Handler, Registry, Task, ValidationError, handler
from taskq.worker.config import WorkerConfig
from taskq.worker.process_pool import ProcessPoolError
from taskq.worker.recoverer import LEASE_EXPIRED
from taskq.worker.server import Server

Q = "default"
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def make_pool_server(make_server):
    """make_server with the process pool and the handlers of process_tasks."""

    def make(**overrides):
        return make_server(registry_=process_tasks.registry, **{"pool": "process", "concurrency": 2, **overrides})

    return make


def running(inspector, task_id: str) -> bool:
    """The handler announced itself (progress 0/1), so its child is running it now."""
    return inspector.get_task(Q, task_id).progress == (0, 1)


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def result_pid(inspector, task_id: str) -> int:
    wait_for(lambda: state_of(inspector, Q, task_id) == "completed", what=f"task {task_id} completed")
    return int(inspector.get_task(Q, task_id).result_json()["pid"])


def began(server, task_id: str) -> bool:
    """The worker holds an attempt of the task that took its slot, so its timeout counts from now."""
    attempt = server.processor.inflight.get((Q, task_id))
    return attempt is not None and attempt.deadline is not None


def idle(server) -> bool:
    return not server.processor.inflight and server.processor.capacity.busy == 0 and server.acker.drain(0)


# -- results and failures -----------------------------------------------------------------------------------------


def test_sync_and_async_handlers_run_in_child_processes_and_write_results(make_pool_server, client, inspector):
    server = make_pool_server()
    children = set(server.processor.processes.pids())
    assert len(children) == 2 and os.getpid() not in children

    added = client.enqueue("proc:add", [1, 2, 3], retention=60)
    async_run = client.enqueue("proc:pid", retention=60)
    plain = client.enqueue("proc:add", [1])  # no retention: deleted on success

    assert result_pid(inspector, added.id) in children
    assert result_pid(inspector, async_run.id) in children
    wait_for(lambda: state_of(inspector, Q, plain.id) is None, what="task without retention deleted")
    done = inspector.get_task(Q, added.id)
    assert done.result_json()["sum"] == 6 and done.progress == (1, 1)
    info = wait_for(lambda: (i := inspector.queue_info(Q)).processed_total == 3 and i, what="3 processed")
    assert (info.failed_total, info.active, info.completed) == (0, 0, 2)


def test_failures_follow_the_handlers_retry_rules(make_pool_server, client, inspector, clock: FakeClock):
    make_pool_server()
    start = clock.now()
    failed = client.enqueue("proc:fail", max_retry=3)
    skipped = client.enqueue("proc:skip", max_retry=10)
    odd = client.enqueue("proc:odd")

    wait_for(lambda: state_of(inspector, Q, failed.id) == "retry", what="failure in retry")
    task = inspector.get_task(Q, failed.id)
    assert task.last_error == "ValueError: bad input" and task.retried == 1
    assert task.next_process_at.timestamp() == pytest.approx(start + 10)  # the handler's retry_delay, in the worker

    wait_for(lambda: state_of(inspector, Q, skipped.id) == "archived", what="SkipRetry archived")
    assert inspector.get_task(Q, skipped.id).last_error == "SkipRetry: negative amount"

    # An exception that cannot be pickled back still reports its own class and message.
    wait_for(lambda: state_of(inspector, Q, odd.id) == "retry", what="unpicklable failure in retry")
    assert inspector.get_task(Q, odd.id).last_error == "NeedsTwoArguments: 503 upstream down"


def test_middleware_runs_around_the_handler_in_the_child(make_pool_server, client, inspector):
    make_pool_server()
    info = client.enqueue("proc:lookup", max_retry=10)
    wait_for(lambda: state_of(inspector, Q, info.id) == "archived", what="archived by the middleware's SkipRetry")
    assert inspector.get_task(Q, info.id).last_error == "SkipRetry: middleware saw KeyError('no such account')"


# -- stopping a child for real ------------------------------------------------------------------------------------


def test_timeout_kills_a_cpu_bound_child_which_is_replaced(
    make_pool_server, client, inspector, clock: FakeClock, tmp_path: Path
):
    server = make_pool_server(concurrency=1)
    [before] = server.processor.processes.pids()
    mark = tmp_path / "on_cancel"
    info = client.enqueue("proc:spin", payload(mark=str(mark)), timeout=5, max_retry=1)
    wait_for(lambda: running(inspector, info.id), what="the busy loop running")

    clock.advance(5)
    wait_for(lambda: state_of(inspector, Q, info.id) == "retry", what="timed-out task in retry")
    task = inspector.get_task(Q, info.id)
    assert (task.last_error, task.retried) == ("TaskCancelledError: timed out after 5 s", 1)
    wait_for(lambda: gone(before), what="the busy child stopped")
    assert mark.read_text() == f"cancelled {info.id}"  # its on_cancel callback ran in the child first
    wait_for(lambda: idle(server), what="the slot freed")

    after = result_pid(inspector, client.enqueue("proc:pid", retention=60).id)
    assert after != before and server.processor.processes.replaced == 1

    # Out of retries, the next timeout archives it.
    inspector.run_task(Q, info.id)
    # Not its progress: the first attempt's (0, 1) is still stored. Its timeout counts from when it takes its
    # slot, so the clock moves only once that is done.
    wait_for(lambda: began(server, info.id), what="the second attempt running")
    clock.advance(5)
    wait_for(lambda: state_of(inspector, Q, info.id) == "archived", what="timed out again: archived")
    wait_for(lambda: gone(after), what="the second busy child stopped")


def test_cancel_kills_a_child_that_ignores_the_stop_signal(make_pool_server, client, inspector, r: redis.Redis):
    server = make_pool_server(concurrency=1)
    [before] = server.processor.processes.pids()
    info = client.enqueue("proc:spin", payload(deaf=True))
    wait_for(lambda: running(inspector, info.id), what="the deaf busy loop running")
    listening_for_cancels(r)

    assert inspector.cancel_task(Q, info.id) == 1
    wait_for(lambda: state_of(inspector, Q, info.id) == "retry", what="cancelled task in retry")
    assert inspector.get_task(Q, info.id).last_error == "TaskCancelledError: cancelled by an operator"
    wait_for(lambda: gone(before), what="SIGKILL after the grace")
    assert result_pid(inspector, client.enqueue("proc:pid", retention=60).id) != before


@pytest.mark.parametrize(
    "how, error",
    [
        ("exit", "exited with code 3"),
        ("kill", "was killed by SIGKILL"),
        ("segfault", "was killed by SIGSEGV"),
    ],
)
def test_a_child_that_dies_fails_its_attempt_and_the_worker_keeps_serving(
    make_pool_server, client, inspector, how, error
):
    server = make_pool_server(concurrency=1)
    [before] = server.processor.processes.pids()
    info = client.enqueue("proc:die", payload(how=how), max_retry=2)
    wait_for(lambda: state_of(inspector, Q, info.id) == "retry", what="the dead child's task in retry")
    task = inspector.get_task(Q, info.id)
    assert task.last_error == f"HandlerProcessDied: handler process {before} {error}"
    assert task.retried == 1
    assert result_pid(inspector, client.enqueue("proc:add", [1], retention=60).id) != before
    stats = inspector.queue_info(Q)
    assert (stats.processed_total, stats.failed_total) == (2, 1)


# -- fencing ------------------------------------------------------------------------------------------------------


def recovered_by_another_worker(redis_url: str, clock: FakeClock) -> None:
    """Another worker, whose clock is past the lease, takes the task back (its recoverer, run once)."""
    rescuer = Server(WorkerConfig(redis_url=redis_url, **FAST), Registry(), clock=FakeClock(clock.now() + 10))
    try:
        rescuer.recoverer.run_once()
        assert rescuer.recoverer.recovered == 1
    finally:
        rescuer.broker.close()


def test_a_childs_write_after_the_lease_was_lost_is_refused(
    make_pool_server, client, inspector, redis_url, clock: FakeClock, tmp_path: Path
):
    zombie = make_pool_server(concurrency=1)
    go, seen = tmp_path / "go", tmp_path / "seen"
    info = client.enqueue("proc:stale", payload(go=str(go), seen=str(seen)), retention=60)
    wait_for(lambda: running(inspector, info.id), what="the child running")
    # The worker goes silent before it can notice anything: no heartbeat, no recoverer of its own.
    zombie.heartbeat.stop()
    zombie.recoverer.stop()
    recovered_by_another_worker(redis_url, clock)
    assert state_of(inspector, Q, info.id) == "retry"

    go.touch()
    wait_for(lambda: seen.exists() and seen.read_text(), what="the child's late write")
    assert seen.read_text() == "LeaseLostError"  # raised inside the child, as in a thread
    wait_for(lambda: zombie.acker.refused == 1, what="the late success refused")
    task = inspector.get_task(Q, info.id)
    assert (task.state, task.result) == ("retry", None)


def test_a_lease_lost_while_the_child_runs_stops_the_child(
    make_pool_server, client, inspector, redis_url, clock: FakeClock
):
    server = make_pool_server(concurrency=1)
    [child] = server.processor.processes.pids()
    info = client.enqueue("proc:spin", payload())
    wait_for(lambda: running(inspector, info.id), what="the child running")
    server.recoverer.stop()  # only the other worker's recoverer acts
    recovered_by_another_worker(redis_url, clock)
    wait_for(lambda: gone(child), what="the heartbeat found the lease lost and the child was stopped")
    wait_for(lambda: idle(server), what="the slot freed")
    task = inspector.get_task(Q, info.id)
    assert (task.state, task.last_error) == ("retry", LEASE_EXPIRED)  # as the recoverer left it
    assert server.acker.refused == 0  # nothing was even sent for the lost attempt


# -- recycling, shutdown, metrics, configuration ------------------------------------------------------------------


def test_max_tasks_per_child_replaces_a_child_after_its_quota(make_pool_server, client, inspector):
    server = make_pool_server(concurrency=1, max_tasks_per_child=2)
    pids = [result_pid(inspector, client.enqueue("proc:pid", retention=60).id) for _ in range(5)]
    assert pids[0] == pids[1] != pids[2] == pids[3] != pids[4]
    assert server.processor.processes.replaced == 2


def test_shutdown_waits_for_running_tasks_then_requeues_and_stops_the_children(make_server, client, inspector):
    server = make_server(
        registry_=process_tasks.registry, start=False, pool="process", concurrency=2, shutdown_timeout=30
    )
    server.start()
    children = server.processor.processes.pids()
    short = client.enqueue("proc:sleep", payload(seconds=0.3), retention=60)
    wait_for(lambda: running(inspector, short.id), what="the short task running")
    server.stop()  # it finishes within the shutdown timeout
    assert state_of(inspector, Q, short.id) == "completed"
    assert all(gone(pid) for pid in children)

    server = make_server(registry_=process_tasks.registry, pool="process", concurrency=2, shutdown_timeout=0.3)
    children = server.processor.processes.pids()
    endless = client.enqueue("proc:spin", payload())
    wait_for(lambda: running(inspector, endless.id), what="the endless task running")
    server.stop()
    assert state_of(inspector, Q, endless.id) == "pending"  # back for the next worker
    assert inspector.get_task(Q, endless.id).retried == 0
    assert all(gone(pid) for pid in children)


def test_process_pool_records_the_same_metrics(make_pool_server, client, inspector):
    server = make_pool_server(metrics_port=0)
    ok = client.enqueue("proc:add", [2], retention=60)
    bad = client.enqueue("proc:fail")
    wait_for(lambda: state_of(inspector, Q, ok.id) == "completed", what="success")
    wait_for(lambda: state_of(inspector, Q, bad.id) == "retry", what="failure")
    wait_for(lambda: idle(server), what="both finished")
    sample = server.metrics.registry.get_sample_value
    assert sample("taskq_task_runtime_seconds_count", {"queue": Q, "type": "proc:add", "outcome": "success"}) == 1
    assert sample("taskq_task_runtime_seconds_count", {"queue": Q, "type": "proc:fail", "outcome": "failure"}) == 1
    assert sample("taskq_worker_tasks_in_flight", {"queue": Q}) == 0


def test_a_handler_a_child_cannot_import_is_refused_at_start(make_server):
    local = Registry()

    @handler("local", registry=local)
    def defined_here(task: Task) -> None:
        pass

    with pytest.raises(ValidationError, match=r'handler "local" .*<locals>.* define it at the top level'):
        make_server(registry_=local, start=False, pool="process")
    assert isinstance(local.route("local"), Handler)


def test_a_child_that_cannot_import_the_handlers_fails_the_workers_start(make_server, client, inspector):
    import process_tasks_broken

    server = make_server(registry_=process_tasks_broken.registry, start=False, pool="process")
    with pytest.raises(ProcessPoolError, match=r"could not start:(.|\n)*this module only imports in the worker"):
        server.start()
    server.stop()  # what run_until_signalled does next: a clean stop of what was started
    info = client.enqueue("broken:never")
    assert state_of(inspector, Q, info.id) == "pending"  # nothing was fetched


def test_a_handler_registered_after_the_start_fails_its_tasks_clearly(make_server, client, inspector):
    late = Registry()
    late.add(process_tasks.add)
    make_server(registry_=late, pool="process", concurrency=1)
    late.add(process_tasks.pid)  # the children were started without it
    info = client.enqueue("proc:pid")
    wait_for(lambda: state_of(inspector, Q, info.id) == "retry", what="in retry")
    assert inspector.get_task(Q, info.id).last_error == (
        'LookupError: handler "proc:pid" was registered after the worker started its handler processes'
    )
    assert result_pid(inspector, client.enqueue("proc:add", [1], retention=60).id) > 0


@pytest.mark.parametrize(
    "overrides, message",
    [
        ({"pool": "proc"}, 'pool must be one of thread, process, asyncio, auto, got "proc"'),
        ({"max_tasks_per_child": 5}, "max tasks per child needs the process pool"),
        ({"pool": "process", "max_tasks_per_child": 0}, "max tasks per child"),
    ],
)
def test_bad_pool_settings_are_named_errors(overrides, message):
    with pytest.raises(ValidationError, match=message):
        WorkerConfig(**overrides)


# -- the command --------------------------------------------------------------------------------------------------


def taskworker(*args: str) -> list[str]:
    return [sys.executable, "manage.py", "taskworker", *args]


def test_taskworker_names_a_bad_pool(redis_url):
    done = subprocess.run(
        taskworker("--pool", "proc"), cwd=ROOT, env=worker_env(redis_url), capture_output=True, text=True, timeout=60
    )
    assert done.returncode != 0
    assert 'taskworker --pool: pool must be one of thread, process, asyncio, auto, got "proc"' in done.stderr


@pytest.fixture
def pool_worker(
    r: redis.Redis, redis_url: str, processes: list, tmp_path: Path
) -> Iterator[tuple[subprocess.Popen, Path, Client]]:
    """A real ``taskworker --pool process --concurrency 2`` on queue procq (its output in a log file; killed at
    teardown if still running), and a client to enqueue with."""
    log = tmp_path / "worker.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            taskworker(
                "--queues", "procq", "--pool", "process", "--concurrency", "2", "--import", "tests.worker.crash_tasks"
            ),
            cwd=ROOT,
            env=worker_env(redis_url),
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    processes.append(proc)
    with Client(redis_url) as client:
        yield proc, log, client


@pytest.mark.slow
def test_taskworker_with_the_process_pool_serves_and_shuts_down_on_sigterm(r: redis.Redis, pool_worker, inspector):
    proc, log, client = pool_worker
    quick = client.enqueue_many([("test:record", {"sleep": 0})] * 5, queue="procq")
    wait_for(lambda: r.scard("test:done") == 5, timeout=60, what=f"5 tasks done\n{log.read_text()}")
    assert {m.decode() for m in r.smembers("test:done")} == {info.id for info in quick}
    endless = client.enqueue("test:record", {"sleep": 600}, queue="procq")
    wait_for(lambda: state_of(inspector, "procq", endless.id) == "active", what="the long task running")
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(60) == 0, log.read_text()
    assert state_of(inspector, "procq", endless.id) == "pending"  # requeued after the shutdown timeout (2 s)
    assert "requeueing 1 unfinished task(s)" in log.read_text()


def descendants(pid: int) -> set[int]:
    """Every live process below ``pid`` (its forkserver and the handler processes), from /proc."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:  # it exited while we looked
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, todo = set(), [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.add(child)
            todo.append(child)
    return found


@pytest.mark.slow
def test_a_sigkilled_worker_leaves_no_handler_process_behind(pool_worker, inspector):
    proc, log, client = pool_worker
    busy = client.enqueue("test:record", {"sleep": 600}, queue="procq")
    running = f"the task running\n{log.read_text()}"
    wait_for(lambda: state_of(inspector, "procq", busy.id) == "active", timeout=60, what=running)
    below = descendants(proc.pid)
    assert len(below) >= 3, below  # the forkserver and two handler processes
    proc.kill()
    proc.wait(10)
    wait_for(lambda: all(gone(pid) for pid in below), what="every handler process gone")
