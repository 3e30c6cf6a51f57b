"""The broker's two faces take the same road: every script path (EVALSHA, NOSCRIPT after SCRIPT FLUSH, FCALL, a
function library gone missing, a pipeline with a failing call, a write too few replicas confirmed) runs on
``Broker`` and on ``AsyncBroker`` from one table, each on a redis-server of its own (the function library and the
command statistics are server-wide)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import redis
import redis.asyncio

from taskq.queues.engine import RedisUnavailableError, TaskIdConflictError, TaskMessage, TaskNotFoundError
from taskq.queues.engine.broker import AsyncBroker, Broker, functions
from taskq.queues.engine.sans_io import Batch, Command, Pipeline
from taskq.queues.engine.scripts import library, script
from taskq.queues.engine.transitions import Placement, Refusal
from tests.redis_servers import started_redis


class Face:
    """One broker, blocking or asyncio, whose calls are made the same way: ``face.do("run", call)``."""

    def __init__(self, url: str, asyncio_face: bool, topology: str = "") -> None:
        """``topology``: a URL whose options the broker follows (``wait_replicas``) while it talks to ``url``."""
        self.loop = asyncio.new_event_loop() if asyncio_face else None
        if asyncio_face:
            self.broker: Any = AsyncBroker(topology or url, conn=redis.asyncio.Redis.from_url(url))
        else:
            self.broker = Broker(topology or url, conn=redis.Redis.from_url(url))

    def do(self, name: str, *args: Any, **kwargs: Any) -> Any:
        result = getattr(self.broker, name)(*args, **kwargs)
        return self.loop.run_until_complete(result) if self.loop is not None else result

    def close(self) -> None:
        self.do("close")
        if self.loop is not None:
            self.loop.close()


def placement(task_id: str) -> Placement:
    return Placement(TaskMessage(task_id, "email", b"{}", "default"))


def enqueue(face: Face, task_id: str) -> Any:
    call = face.broker.transitions.enqueue("default", [placement(task_id)])
    return face.do("run", call, replicated=True)


def pending(r: redis.Redis) -> list[bytes]:
    return r.lrange("tq:{default}:pending", 0, -1)


def calls_of(r: redis.Redis, command: str) -> int:
    return int(r.info("commandstats").get(f"cmdstat_{command}", {}).get("calls", 0))


def library_loaded(r: redis.Redis) -> bool:
    return bool(r.execute_command("FUNCTION", "LIST", "LIBRARYNAME", library()[0]))


def evalsha(face: Face, r: redis.Redis) -> None:
    functions.use_evalsha(face.broker.conn)
    assert enqueue(face, "a") is True and enqueue(face, "b") is False
    assert face.broker.as_functions is False and not library_loaded(r)
    assert calls_of(r, "evalsha") == 2 and calls_of(r, "fcall") == 0


def noscript_after_script_flush(face: Face, r: redis.Redis) -> None:
    functions.use_evalsha(face.broker.conn)
    enqueue(face, "a")  # a new server: NOSCRIPT too
    r.script_flush()
    sent_in_full = calls_of(r, "eval")
    assert enqueue(face, "b") is False  # NOSCRIPT, then the script in full, which caches it again
    assert r.script_exists(script("enqueue").sha) == [True] and calls_of(r, "eval") == sent_in_full + 1


def fcall(face: Face, r: redis.Redis) -> None:
    assert enqueue(face, "a") is True and enqueue(face, "b") is False
    assert face.broker.as_functions is True and library_loaded(r)
    assert calls_of(r, "fcall") == 2 and calls_of(r, "evalsha") == 0


def function_flush_then_call(face: Face, r: redis.Redis) -> None:
    enqueue(face, "a")
    r.execute_command("FUNCTION", "FLUSH")
    assert enqueue(face, "b") is False  # "function not found": loaded again, and called once more
    assert library_loaded(r) and calls_of(r, "fcall") == 3


def pipeline_with_a_failing_call(face: Face, r: redis.Redis) -> None:
    t = face.broker.transitions
    placed = [Placement(TaskMessage(n, "email", b"{}", "default")) for n in ("a", "b")]
    calls = [
        t.enqueue("default", placed[:1]),
        t.delete_task("default", "missing", "ops"),
        t.enqueue("default", placed[1:]),
    ]
    outcomes = face.do("run_pipeline", Pipeline(calls))
    assert outcomes[0] is True and outcomes[2] is False  # the calls around the failing one ran
    assert isinstance(outcomes[1], TaskNotFoundError) and outcomes[1].op == "delete_task"
    assert pending(r) == [b"b", b"a"]


def too_few_replicas(face: Face, r: redis.Redis) -> None:
    with pytest.raises(RedisUnavailableError, match="confirmed by 0 of 1 replica"):
        enqueue(face, "a")
    assert pending(r) == [b"a"]  # applied on the master: the caller retries with the same id
    # The retry is refused (the id exists), which wrote nothing: the refusal is the answer, not the replicas.
    with pytest.raises(TaskIdConflictError, match='task id "a" already exists'):
        enqueue(face, "a")
    again = face.broker.transitions.enqueue("default", [placement("a")], refusal_as_reply=True)
    assert face.do("run", again, replicated=True) == Refusal("CONFLICT", 0)


@dataclass
class Case:
    id: str
    check: Callable[[Face, redis.Redis], None]
    #: A sentinel URL's options for the broker to follow (a URL of one server takes none).
    sentinel_options: str = ""


CASES = [
    Case("EVALSHA", evalsha),
    Case("NOSCRIPT after SCRIPT FLUSH", noscript_after_script_flush),
    Case("FCALL", fcall),
    Case("FUNCTION FLUSH then call", function_flush_then_call),
    Case("pipeline with a failing call", pipeline_with_a_failing_call),
    Case("WAIT for replicas refused", too_few_replicas, "?wait_replicas=1&wait_timeout=20"),
]


@pytest.fixture
def own_server(tmp_path: Path) -> Iterator[str]:
    with started_redis(tmp_path) as url:
        yield url


@pytest.mark.parametrize("asyncio_face", [False, True], ids=["Broker", "AsyncBroker"])
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_each_script_path_on_both_faces(own_server: str, case: Case, asyncio_face: bool):
    r = redis.Redis.from_url(own_server)
    sentinel = f"redis+sentinel://127.0.0.1:1/main/1{case.sentinel_options}" if case.sentinel_options else ""
    face = Face(own_server, asyncio_face, sentinel)
    try:
        case.check(face, r)
    finally:
        face.close()
        r.close()


@pytest.mark.parametrize("asyncio_face", [False, True], ids=["Broker", "AsyncBroker"])
def test_each_face_knows_its_database_for_the_channels_it_names(own_server: str, asyncio_face: bool):
    face = Face(own_server, asyncio_face)  # the URL names database 1
    try:
        assert face.broker.database == 1
    finally:
        face.close()


@pytest.mark.parametrize("asyncio_face", [False, True], ids=["Broker", "AsyncBroker"])
@pytest.mark.parametrize(("atomic", "multis"), [(True, 1), (False, 0)], ids=["atomic", "reads"])
def test_a_batch_is_one_multi_only_when_atomic(own_server: str, asyncio_face: bool, atomic: bool, multis: int):
    """A batch of reads skips MULTI (a QUEUED reply per command, for nothing); an atomic one is one transaction."""
    r = redis.Redis.from_url(own_server)
    face = Face(own_server, asyncio_face)
    try:
        r.set("k", "v")
        r.config_resetstat()
        batch = Batch([Command("get", ("k",)), Command("exists", ("k",))], atomic)
        assert face.do("execute", "test.batch", batch) == [b"v", 1]
        calls = {name: stats["calls"] for name, stats in r.info("commandstats").items()}
        assert (calls.get("cmdstat_multi", 0), calls.get("cmdstat_exec", 0)) == (multis, multis)
        assert (calls["cmdstat_get"], calls["cmdstat_exists"]) == (1, 1)
    finally:
        face.close()
