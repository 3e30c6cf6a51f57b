"""The Django producers carry the context of the call that enqueued: the Tasks backend's ``enqueue`` and
``aenqueue``, and an enqueue deferred to the transaction's commit (the backend's, and ``enqueue_on_commit``), which
joins the trace of the call that asked for it even when the commit runs after that call's span has ended."""

from __future__ import annotations

import asyncio

import pytest

from taskq.queues.engine import tracing
from taskq.queues.transaction import enqueue_on_commit
from tests.djtasks import tasks
from tests.djtasks.settings import TASKS

from .test_tracing_producer_client import carried_ids, finished, ids_of


@pytest.fixture
def djtasks(settings_redis, r):
    settings_redis.TASKS = TASKS
    return settings_redis


def test_the_tasks_backend_enqueue_and_aenqueue_carry_the_context(spans, djtasks, inspector):
    greet = tasks.greet.using(queue_name="djtasks-mail")
    with tracing.tracer().start_as_current_span("request") as request:
        enqueued = greet.enqueue("ada")
        awaited = asyncio.run(greet.aenqueue("grace"))

    sends = finished(spans, "send djtasks-mail")
    assert len(sends) == 2 and all(s.parent.span_id == request.get_span_context().span_id for s in sends)
    for send, result in zip(sends, (enqueued, awaited), strict=True):
        assert send.attributes["messaging.message.id"] == result.id
        headers = inspector.get_task("djtasks-mail", result.id).headers
        assert carried_ids(headers) == ids_of(send)
        assert headers["django-tasks-backend"] == "default"  # the backend's own headers are kept


@pytest.mark.django_db
def test_an_enqueue_deferred_to_the_commit_joins_the_trace_of_the_call_that_asked(
    spans, djtasks, inspector, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        with tracing.tracer().start_as_current_span("request") as request:
            enqueued = tasks.greet.enqueue("ada")
            task_id = enqueue_on_commit("email:deliver", {"to": "ada"})
        assert spans.get_finished_spans()[-1].name == "request"  # nothing sent before the commit
    assert len(callbacks) == 2

    sends = finished(spans, "send default")
    assert len(sends) == 2 and all(s.parent.span_id == request.get_span_context().span_id for s in sends)
    assert [carried_ids(inspector.get_task("default", i).headers) for i in (enqueued.id, task_id)] == [
        ids_of(s) for s in sends
    ]


@pytest.mark.django_db
def test_a_commit_outside_any_span_adds_nothing(spans, djtasks, inspector, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        task_id = enqueue_on_commit("email:deliver", {"to": "ada"})
    assert inspector.get_task("default", task_id).headers == {}
    assert spans.get_finished_spans() == ()
