"""On a Go asynq deployment operator actions leave the task's message untouched, a trace context current or not:
they are asynq's own transitions, and Go workers read the same message. Every key is compared."""

from __future__ import annotations

import pytest

from taskq.queues.engine import tracing
from taskq.queues.engine.asynq.inspection.task_actions import AsynqTaskActions
from taskq.queues.engine.asynq.keys import AsynqQueueKeys
from taskq.queues.engine.inspection.inspector_core import InspectorCore
from tests.asynq.keyspace import seed_task, snapshot

Q = AsynqQueueKeys("default")


@pytest.fixture
def actions(broker):
    return AsynqTaskActions(InspectorCore(broker))


def test_run_in_a_trace_leaves_the_asynq_message_as_it_was(spans, r, actions):
    message = seed_task(r, "default", "a", "archived")
    with tracing.tracer().start_as_current_span("operator request"):
        assert tracing.recording()
        actions.run_task("op", "default", "a")
    after = snapshot(r)
    assert after[Q.task("a").encode()][b"msg"] == message
    assert after[Q.task("a").encode()][b"state"] == b"pending"
