"""Queue patterns (``taskworker --queues 'tenant-*=1'``): parsing, resolution, a worker that serves queues created
after it started (found by the wake-up of their first task, or by the periodic resolution), and a real
``manage.py taskworker`` process doing the same."""

from __future__ import annotations

from pathlib import Path

import pytest
import redis
from worker_support import start_taskworker, wait_for

from taskq.queues.engine import Client, Inspector, Task, ValidationError, handler
from taskq.queues.engine.broker import Broker
from taskq.queues.engine.policies import PolicySet, PolicyStore, QueueSpec
from taskq.worker.config import entry_for, parse_queues, split_patterns
from taskq.worker.patterns import resolve


def test_patterns_are_parsed_with_names_and_weights_and_split_off():
    parsed = parse_queues("critical=6,tenant-*=2,t?-[ab]*,default")
    assert split_patterns(parsed) == ({"critical": 6, "default": 1}, {"tenant-*": 2, "t?-[ab]*": 1})
    with pytest.raises(ValidationError, match="may not contain"):
        parse_queues("tenant-{*}=1")  # braces would break the hash tag of the wake-up channel pattern too


@pytest.mark.parametrize(
    "names, patterns, candidates, served",
    [
        ({}, {"tenant-*": 1}, ["tenant-a", "tenant-b", "other"], {"tenant-a": 1, "tenant-b": 1}),
        ({"tenant-vip": 9}, {"tenant-*": 1}, ["tenant-vip", "tenant-a"], {"tenant-vip": 9, "tenant-a": 1}),
        ({}, {"tenant-eu-*": 3, "tenant-*": 1}, ["tenant-eu-1", "tenant-us-1"], {"tenant-eu-1": 3, "tenant-us-1": 1}),
        ({"default": 1}, {"t?": 2}, ["t1", "t12", "default"], {"default": 1, "t1": 2}),
        ({}, {"Tenant-*": 1}, ["tenant-a"], {}),  # case matters, as in queue names
    ],
)
def test_resolution_explicit_names_win_then_the_first_matching_pattern(names, patterns, candidates, served):
    assert resolve(names, patterns, candidates) == served


@pytest.mark.parametrize(
    ("queue", "entry"),
    [("plain", "plain"), ("*", "[*]"), ("tenant-?", "tenant-[?]"), ("a[b]", "a[[]b]"), ("x*[?", "x[*][[][?]")],
)
def test_the_entry_for_a_queue_serves_only_that_queue(queue, entry):
    """A queue written before glob characters were refused for new tasks is served by a pattern matching only it."""
    assert entry_for(queue) == entry
    known = ["*", "tenant-?", "tenant-a", "a[b]", "ab]", "x*[?", "xy[?", "plain"]
    names, patterns = split_patterns(parse_queues(entry))
    assert resolve(names, patterns, known) == {queue: 1}


def test_a_new_queue_is_served_on_the_wake_up_of_its_first_task(make_server, registry, client, inspector):
    ran: list[str] = []

    @handler("job", registry=registry)
    def job(task: Task) -> None:
        ran.append(task.queue)

    # A resolution period of an hour: after the start, only the wake-up can bring new queues in.
    server = make_server(queues={"fixed": 2}, queue_patterns={"tenant-*": 3, "fix*": 7}, definitions_interval=3600)
    assert server.queues.weights() == {"fixed": 2}
    client.enqueue("job", {}, queue="other")
    client.enqueue("job", {}, queue="tenant-new")
    wait_for(lambda: ran == ["tenant-new"], what="the new tenant's task ran")
    assert server.queues.weights() == {"fixed": 2, "tenant-new": 3}  # an explicit name wins over "fix*"
    assert inspector.queue_info("other").pending == 1
    wait_for(
        lambda: any(s.queues == {"fixed": 2, "tenant-new": 3} for s in inspector.servers()),
        what="the heartbeat publishes the matched queue",
    )
    # ... and its patterns, so the console counts a queue they match as read before the worker resolves it.
    [published] = inspector.servers()
    assert published.patterns == ["tenant-*", "fix*"] and published.reads("tenant-later")


def test_queues_without_a_wake_up_are_found_by_the_periodic_resolution(make_server, registry, client, r):
    server = make_server(queues={"fixed": 1}, queue_patterns={"tenant-*": 1}, definitions_interval=0.1)
    client.enqueue("job", {}, queue="tenant-later", process_in=3600)  # listed, but nothing pending: no wake-up
    PolicyStore(Broker(conn=r)).write(PolicySet(queues={"tenant-defined": QueueSpec("tenant-defined")}))
    wait_for(
        lambda: server.queues.weights() == {"fixed": 1, "tenant-later": 1, "tenant-defined": 1},
        what="the listed and the defined tenant queues served",
    )


@pytest.mark.slow
def test_a_taskworker_process_serves_a_queue_created_after_it_started(
    r: redis.Redis, redis_url, processes, tmp_path: Path
):
    inspector = Inspector(redis_url)
    client = Client(redis_url)
    try:
        proc = start_taskworker(
            processes,
            redis_url,
            tmp_path / "worker.log",
            "--queues",
            "tenant-*=1",
            "--import",
            "tests.worker.crash_tasks",
        )

        def up() -> bool:
            assert proc.poll() is None, (tmp_path / "worker.log").read_text()
            return any(s.pid == proc.pid for s in inspector.servers())

        wait_for(up, timeout=30, what="the worker up")
        other = client.enqueue("test:record", {}, queue="other").id
        new = client.enqueue("test:record", {}, queue="tenant-new").id
        wait_for(
            lambda: r.sismember("test:done", new),
            timeout=30,
            what=f"the new tenant's task done\n{(tmp_path / 'worker.log').read_text()[-3000:]}",
        )
        assert not r.sismember("test:done", other) and inspector.queue_info("other").pending == 1
        wait_for(
            lambda: any(s.queues == {"tenant-new": 1} for s in inspector.servers()),
            what="the worker serves the new queue, and only it",
        )
    finally:
        client.close()
        inspector.broker.close()
