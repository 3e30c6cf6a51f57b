"""The errors of a refused enqueue, built once from what the script answered: a ``Refusal`` (code and position)
becomes the plain error one ``enqueue`` raises, or for ``enqueue_many`` the bulk error that is that plain error and
a ``BulkEnqueueError`` besides (with what was enqueued before it), so ``except`` clauses written for either catch
it. No message is parsed back, and no class is reached by two roads from the engine's base error."""

from __future__ import annotations

import pytest

from taskq.queues.engine import BulkEnqueueError, TaskInfo, errors
from taskq.queues.engine import producer_flows as flows
from taskq.queues.engine.producer import plan
from taskq.queues.engine.transitions import Refusal

from .task_state import KEYS, NOW

CHUNK = [plan(KEYS, NOW, "t", {"n": n}, {"task_id": f"id-{n}"}, "client.enqueue_many") for n in range(3)]
EARLIER = [TaskInfo(id="before", type="t", queue="default", state="pending")]
REFUSALS = [
    (Refusal("DUPLICATE", 1), errors.DuplicateTaskError, 'a unique task of type "t" with the same payload'),
    (Refusal("CONFLICT", 1), errors.TaskIdConflictError, 'task id "id-1" already exists in queue "default"'),
]


@pytest.mark.parametrize(("refusal", "kind", "text"), REFUSALS, ids=["duplicate", "conflict"])
def test_a_refused_task_alone_is_the_plain_error_naming_it(refusal: Refusal, kind: type, text: str):
    error = flows.refused(refusal, CHUNK)
    assert type(error) is kind and not isinstance(error, BulkEnqueueError)
    assert text in str(error) and error.op == "client.enqueue"


@pytest.mark.parametrize(("refusal", "kind", "text"), REFUSALS, ids=["duplicate", "conflict"])
def test_a_refused_task_of_enqueue_many_is_both_errors_with_its_position(refusal: Refusal, kind: type, text: str):
    error = flows.refused(refusal, CHUNK, EARLIER)
    assert isinstance(error, BulkEnqueueError) and isinstance(error, kind)
    assert error.position == 1 and error.enqueued == EARLIER and error.enqueued is not EARLIER
    assert text in str(error) and error.op == "client.enqueue" and error.code == kind.code


#: The errors a chunk can fail with as a whole: nothing names one task of it.
WHOLE_CHUNK = [
    errors.RedisUnavailableError("Redis is unreachable: reset", op="client.enqueue_many"),
    errors.RedisCommandError("OOM command not allowed", op="client.enqueue_many"),
    errors.FailedPreconditionError("barred", op="client.enqueue_many"),
    errors.EngineError("script enqueue failed: ODD", op="client.enqueue_many"),
]


@pytest.mark.parametrize("plain", WHOLE_CHUNK, ids=lambda e: type(e).__name__)
def test_a_chunk_that_failed_as_a_whole_keeps_its_error(plain: errors.EngineError):
    error = flows.chunk_failed(plain, EARLIER)
    assert isinstance(error, BulkEnqueueError) and isinstance(error, type(plain))
    assert error.position is None and error.enqueued == EARLIER
    assert (str(error), error.code) == (str(plain), plain.code)


def test_a_connection_error_stays_a_connection_error():
    """Code that catches the builtin ConnectionError (as RedisUnavailableError is one) still catches it."""
    with pytest.raises(ConnectionError):
        raise flows.chunk_failed(errors.RedisUnavailableError("gone", op="client.enqueue_many"), [])


def _engine_bases(cls: type) -> list[type]:
    return [base for base in cls.__bases__ if issubclass(base, errors.EngineError)]


@pytest.mark.parametrize(
    "bulk", [cls for cls in vars(flows).values() if isinstance(cls, type) and issubclass(cls, BulkEnqueueError)]
)
def test_no_bulk_error_reaches_the_engine_error_by_two_roads(bulk: type):
    """Each bulk class is one plain error plus the BulkEnqueueError marker, which is not an engine error itself."""
    assert not issubclass(BulkEnqueueError, errors.EngineError)
    assert bulk is BulkEnqueueError or len(_engine_bases(bulk)) == 1
