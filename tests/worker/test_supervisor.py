"""``taskworker --processes N``: real supervisor and worker processes on the test Redis. A child that dies is
started again, SIGTERM stops every child, and a SIGKILLed supervisor leaves no child fetching."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest
import redis
from worker_support import start_taskworker, wait_for

from taskq.queues.engine import Client, Inspector
from taskq.worker.supervisor import MAX_DELAY, STABLE_AFTER, RestartPolicy, Supervisor, child_arguments, process_count

DONE_KEY = "test:done"  # crash_tasks.DONE_KEY (not imported: it would register its handler in this process)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie (exited, not yet reaped by its parent) is not running either
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] != "Z"
    except FileNotFoundError:
        return False


def parent_of(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().split(") ")[1].split()[1])


def children_serving(inspector: Inspector, supervisor: subprocess.Popen, count: int) -> list[int]:
    """The pids of the supervisor's children that are in the server list, once there are ``count`` of them."""
    assert supervisor.poll() is None, f"the supervisor exited with {supervisor.returncode}"
    pids = sorted(s.pid for s in inspector.servers() if alive(s.pid) and parent_of(s.pid) == supervisor.pid)
    return pids if len(pids) == count else []


def start_supervisor(processes, redis_url: str, log: Path, count: str = "2", pool: str = "thread") -> subprocess.Popen:
    return start_taskworker(
        processes,
        redis_url,
        log,
        "--pool",
        pool,
        "--processes",
        count,
        "--queues",
        "sup",
        "--concurrency",
        "2",
        "--import",
        "tests.worker.crash_tasks",
    )


@pytest.mark.slow
@pytest.mark.parametrize(("pool", "task_type"), [("thread", "test:record"), ("asyncio", "test:arecord")])
def test_two_processes_serve_restart_and_stop(
    r: redis.Redis, redis_url: str, processes, tmp_path: Path, pool, task_type
):
    log = tmp_path / "supervisor.log"
    with Inspector(redis_url) as inspector, Client(redis_url) as client:
        supervisor = start_supervisor(processes, redis_url, log, pool=pool)
        first = wait_for(lambda: children_serving(inspector, supervisor, 2), timeout=60, what="two worker processes")

        infos = client.enqueue_many([(task_type, {"sleep": 0})] * 40, queue="sup")
        wait_for(lambda: r.scard(DONE_KEY) == 40, timeout=30, what="40 tasks done")
        assert {m.decode() for m in r.smembers(DONE_KEY)} == {i.id for i in infos}

        # a child that dies is started again; the other one is left alone
        os.kill(first[0], signal.SIGKILL)
        now = wait_for(
            lambda: (pids := children_serving(inspector, supervisor, 2)) and first[0] not in pids and pids,
            timeout=60,
            what=f"the killed process replaced\n{log.read_text()[-3000:]}",
        )
        assert first[1] in now
        assert "exited with -9" in log.read_text()

        supervisor.send_signal(signal.SIGTERM)
        assert supervisor.wait(30) == 0
        assert not any(alive(pid) for pid in now)


@pytest.mark.slow
def test_a_sigkilled_supervisor_leaves_no_child(redis_url: str, processes, tmp_path: Path):
    with Inspector(redis_url) as inspector:
        supervisor = start_supervisor(processes, redis_url, tmp_path / "supervisor.log")
        pids = wait_for(lambda: children_serving(inspector, supervisor, 2), timeout=60, what="two worker processes")
        supervisor.send_signal(signal.SIGKILL)
        supervisor.wait(10)
        wait_for(lambda: not any(alive(pid) for pid in pids), timeout=30, what="the children gone with it")


def test_bad_process_counts_are_refused_before_anything_starts(redis_url: str, processes, tmp_path: Path):
    for bad, message in (("0", "between 1 and 256"), ("two", "whole number or 'auto'")):
        log = tmp_path / f"bad-{bad}.log"
        proc = start_taskworker(processes, redis_url, log, "--processes", bad)
        assert proc.wait(60) == 1
        assert message in log.read_text()


def test_process_count():
    assert process_count("3") == 3
    assert process_count("auto") == (os.cpu_count() or 1)
    for bad in ("0", "257", "-1", "1.5", "", "auto2"):
        with pytest.raises(ValueError):
            process_count(bad)


def test_children_run_the_same_command_with_one_process():
    argv = ["manage.py", "taskworker", "--processes", "4", "--queues", "a=1", "--processes=2", "--concurrency", "8"]
    assert child_arguments(argv) == [
        "manage.py",
        "taskworker",
        "--queues",
        "a=1",
        "--concurrency",
        "8",
        "--processes",
        "1",
    ]


def test_quick_deaths_back_off_and_a_stable_run_resets():
    policy = RestartPolicy()
    delays = [policy.delay_after(lived=0.1) for _ in range(9)]
    assert delays == [0.5, 1.0, 2.0, 4.0, 8.0, 16.0, MAX_DELAY, MAX_DELAY, MAX_DELAY]
    assert policy.quick_deaths == 9
    assert policy.delay_after(lived=STABLE_AFTER) == 0.0
    assert policy.quick_deaths == 0
    assert policy.delay_after(lived=1.0) == 0.5


class FakeProcess:
    """Stands in for a child process in the restart bookkeeping: it exits when the test says so."""

    pids = iter(range(10_000, 20_000))

    def __init__(self, *args, **kwargs) -> None:
        self.pid = next(self.pids)
        self.code: int | None = None

    def poll(self) -> int | None:
        return self.code


def test_one_child_backing_off_does_not_hold_back_another():
    supervisor = Supervisor(["taskworker"], 2, 1.0, spawn=FakeProcess)
    supervisor.start_child(0)
    supervisor.start_child(1)
    supervisor.policies[0].quick_deaths = 5  # child 0 is deep in a crash loop: its next delay is 16 s
    supervisor.children[1].started -= STABLE_AFTER  # child 1 ran long enough to count as stable
    first, second = supervisor.children[0].proc, supervisor.children[1].proc
    first.code = second.code = 1
    supervisor.watch_once()
    assert supervisor.children[0].proc is first  # waiting out its delay
    assert supervisor.children[1].proc is not second  # started again at once
    supervisor.children[0].restart_at -= 16  # the delay has passed
    supervisor.watch_once()
    assert supervisor.children[0].proc is not first
