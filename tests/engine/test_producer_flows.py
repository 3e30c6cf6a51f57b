"""``producer_flows.refusal``: the error a refused (or unsent) chunk of an enqueue raises is a declared
``BulkEnqueueError`` with what was enqueued before it, and still the error it stands for, so ``except`` clauses
written for the plain error keep catching it."""

from __future__ import annotations

import pytest

from taskq.queues.engine import BulkEnqueueError, TaskInfo, errors
from taskq.queues.engine.producer import plan
from taskq.queues.engine.producer_flows import refusal

from .task_state import KEYS, NOW

CHUNK = [plan(KEYS, NOW, "t", {"n": n}, {"task_id": f"id-{n}"}, "client.enqueue_many") for n in range(3)]
EARLIER = [TaskInfo(id="before", type="t", queue="default", state="pending")]


@pytest.mark.parametrize(
    ("plain", "text"),
    [
        (errors.DuplicateTaskError("2", op="client.enqueue_many"), 'a unique task of type "t" with the same payload'),
        (errors.TaskIdConflictError("2", op="client.enqueue_many"), 'task id "id-1" already exists in queue "default"'),
    ],
    ids=["duplicate", "conflict"],
)
def test_a_refused_task_is_named_and_its_position_kept(plain: errors.EngineError, text: str):
    error = refusal(plain, CHUNK, EARLIER)
    assert isinstance(error, BulkEnqueueError) and isinstance(error, type(plain))
    assert error.position == 1 and error.enqueued == EARLIER and error.enqueued is not EARLIER
    assert text in str(error) and error.op == "client.enqueue" and error.code == plain.code


#: The errors a chunk can fail with as a whole: nothing names one task of it.
WHOLE_CHUNK = [
    errors.RedisUnavailableError("Redis is unreachable: reset", op="client.enqueue_many"),
    errors.RedisCommandError("OOM command not allowed", op="client.enqueue_many"),
    errors.FailedPreconditionError("barred", op="client.enqueue_many"),
    errors.EngineError("script enqueue failed: ODD", op="client.enqueue_many"),
]


@pytest.mark.parametrize("plain", WHOLE_CHUNK, ids=lambda e: type(e).__name__)
def test_a_chunk_that_failed_as_a_whole_keeps_its_error(plain: errors.EngineError):
    error = refusal(plain, CHUNK, EARLIER)
    assert isinstance(error, BulkEnqueueError) and isinstance(error, type(plain))
    assert error.position is None and error.enqueued == EARLIER
    assert (str(error), error.code) == (str(plain), plain.code)


def test_a_connection_error_stays_a_connection_error():
    """Code that catches the builtin ConnectionError (as RedisUnavailableError is one) still catches it."""
    with pytest.raises(ConnectionError):
        raise refusal(errors.RedisUnavailableError("gone", op="client.enqueue_many"), CHUNK, [])


@pytest.mark.parametrize(
    "plain", [errors.DuplicateTaskError("1", op="client.enqueue"), *WHOLE_CHUNK], ids=lambda e: type(e).__name__
)
def test_alone_is_the_plain_error_a_single_enqueue_raises(plain: errors.EngineError):
    bulk = refusal(plain, CHUNK, EARLIER)
    alone = bulk.alone()
    assert type(alone) is type(plain) and not isinstance(alone, BulkEnqueueError)
    assert (str(alone), alone.code) == (str(bulk), plain.code) and not hasattr(alone, "enqueued")
