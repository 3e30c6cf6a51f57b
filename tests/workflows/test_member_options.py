"""Handler options apply to workflow members (issue 23): ``@handler("parse", max_retry=1)`` used to leave
``sig("parse")`` at the default 25 retries with growing backoff, so the workflow read "running" for days. A member
without an option takes its handler's (found by longest prefix, as a worker routes it); one that gives it keeps
its own."""

from __future__ import annotations

import pytest
from worker_support import wait_for

from taskq.queues.engine import Client, Task, chain, handler, parallel, sig


@pytest.fixture
def handlers(registry):
    @handler("parse", max_retry=1, timeout=30, retention=60, queue="elsewhere", registry=registry)
    def parse(task: Task) -> None:
        raise ValueError("bad row")

    return registry


@pytest.fixture
def submitter(r, redis_url, clock, handlers):
    with Client(redis_url, clock=clock, policies=False, registry=handlers) as c:
        yield c


def test_a_member_takes_its_handlers_options_unless_it_gives_its_own(submitter, inspector):
    info = submitter.submit(
        parallel(sig("parse"), sig("parse:csv"), sig("parse", max_retry=5, timeout=2, retention=0), sig("other")),
        queue="etl",
    )
    plain, by_prefix, own, unhandled = (inspector.get_task("etl", m.id) for m in info.members)
    assert (plain.max_retry, plain.timeout, plain.retention) == (1, 30, 60)
    assert (by_prefix.max_retry, by_prefix.timeout) == (1, 30)  # "parse" is the longest prefix of "parse:csv"
    assert (own.max_retry, own.timeout, own.retention) == (5, 2, 0)
    assert unhandled.max_retry == 25  # no handler registered: the engine's default, as before
    # The handler's queue does not move a member out of its workflow's queue.
    assert {plain.queue, by_prefix.queue} == {"etl"}


def test_a_failing_member_stops_after_its_handlers_retries(make_server, redis_url, clock, registry, inspector):
    @handler("flaky", max_retry=1, retry_delay=lambda retried, error, task: 0, registry=registry)
    def flaky(task: Task) -> None:
        raise ValueError("bad row")

    @handler("store", registry=registry)
    def store(task: Task) -> None: ...

    make_server()
    with Client(redis_url, clock=clock, policies=False, registry=registry) as submitter:
        info = submitter.submit(chain(sig("flaky"), sig("store")))
        done = submitter.wait_workflow(info.id, timeout=15)
    assert done.state == "failed" and done.failed_member == info.members[0].id
    failed = inspector.get_task("default", info.members[0].id)
    # Two failed attempts: the first, and the one retry its handler allows.
    assert (failed.state, failed.retried, failed.max_retry) == ("archived", 2, 1)
    wait_for(lambda: inspector.workflow("default", info.id).state == "failed", what="the failed workflow")
