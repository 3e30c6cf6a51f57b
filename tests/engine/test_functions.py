"""Transition scripts as Redis functions: loaded once, called with FCALL where the server has functions, loaded
again when they went missing, and EVALSHA where the server refuses FUNCTION (Redis 6.2, a hardened setup) or the
pool was told to keep it. Every table-driven script case runs both ways as well (script_runs.run_case)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import redis

from taskq.queues.engine import EngineError, TaskMessage
from taskq.queues.engine.broker import Broker, functions
from taskq.queues.engine.sans_io import Pipeline
from taskq.queues.engine.scripts import library
from taskq.queues.engine.transitions import Placement
from tests.redis_servers import started_redis

LIBRARY = library()[0]


def library_loaded(r: redis.Redis) -> bool:
    return bool(r.execute_command("FUNCTION", "LIST", "LIBRARYNAME", LIBRARY))


def delete_library(r: redis.Redis) -> None:
    # Only this taskq version's library (its name carries the hash of its Lua): never FUNCTION FLUSH.
    if library_loaded(r):
        r.execute_command("FUNCTION", "DELETE", LIBRARY)


@contextmanager
def own_broker(tmp_path: Path, *server_args: str) -> Iterator[Broker]:
    """A Broker on a redis-server of its own. The function library is server-wide: deleting it on the shared server
    would pull it from under every other test process's workers and schedulers, and another test process (xdist)
    may load it there whatever the pool under test does."""
    with started_redis(tmp_path, *server_args) as url:
        broker = Broker(url)
        try:
            yield broker
        finally:
            broker.close()


def dequeue_nothing(broker: Broker) -> None:
    assert list(broker.run(broker.transitions.dequeue("default", 1, 30, "w1", "tok-"))) == []


def assert_ran_as_scripts(broker: Broker) -> None:
    commands = broker.conn.info("commandstats")
    assert "cmdstat_evalsha" in commands or "cmdstat_eval" in commands
    assert "cmdstat_fcall" not in commands


def test_a_library_that_went_missing_is_loaded_again_and_the_call_retried(tmp_path):
    with own_broker(tmp_path) as broker:
        dequeue_nothing(broker)
        assert broker.as_functions and library_loaded(broker.conn)
        delete_library(broker.conn)  # as FUNCTION FLUSH, or a restart without persistence, would
        dequeue_nothing(broker)
        assert library_loaded(broker.conn)  # the FCALL found no function, loaded the library and ran again


def test_a_pool_told_to_keep_evalsha_never_calls_a_function(tmp_path):
    with own_broker(tmp_path) as broker:
        functions.use_evalsha(broker.conn)
        dequeue_nothing(broker)
        assert not library_loaded(broker.conn)
        assert_ran_as_scripts(broker)


def test_a_server_without_function_keeps_evalsha(tmp_path):
    with own_broker(tmp_path, "--rename-command", "FUNCTION", '""') as broker:
        dequeue_nothing(broker)
        assert broker.as_functions is False
        assert_ran_as_scripts(broker)


def test_over_maxmemory_an_ack_still_goes_through_as_with_evalsha(tmp_path):
    """A script runs until its first command that would grow memory, so done (which starts by removing the task
    from the lease set) goes through over maxmemory, and an enqueue is refused; a function would be refused before
    it runs. Both ways must do what EVALSHA does."""
    with started_redis(tmp_path, "--maxmemory-policy", "noeviction") as url:
        for evalsha in (False, True):
            broker = Broker(url)
            if evalsha:
                functions.use_evalsha(broker.conn)
            try:
                broker.conn.flushdb()
                ops = broker.transitions
                n = 1
                broker.run(
                    ops.enqueue("default", [Placement(TaskMessage(f"t{evalsha}{n}", "email", b"{}", "default"))])
                )
                n = 2
                (leased,) = broker.run(ops.dequeue("default", 1, 30, "w1", "tok-"))
                broker.conn.config_set("maxmemory", 1)  # every command that grows memory is refused from now on
                try:
                    with pytest.raises(EngineError, match="maxmemory"):
                        broker.run(
                            ops.enqueue(
                                "default", [Placement(TaskMessage(f"t{evalsha}{n}", "email", b"{}", "default"))]
                            )
                        )
                    assert broker.run(ops.done("default", [(leased.id, leased.token)], "w1")) == ["OK"]
                finally:
                    broker.conn.config_set("maxmemory", 0)
                assert broker.as_functions is not evalsha
            finally:
                broker.close()


def enqueue_pipelined(broker: Broker, task_id: str) -> list:
    """One enqueue the way a producer sends it: through ``run_pipeline`` (a Client's enqueue and enqueue_many)."""
    call = broker.transitions.enqueue("default", [Placement(TaskMessage(task_id, "email", b"{}", "default"))])
    return broker.run_pipeline(Pipeline([call], lambda: None))


def test_a_producers_pipelined_calls_go_out_as_functions(tmp_path):
    with own_broker(tmp_path) as broker:
        assert enqueue_pipelined(broker, "a") == [True]
        assert enqueue_pipelined(broker, "b") == [False]
        commands = broker.conn.info("commandstats")
        assert commands["cmdstat_fcall"]["calls"] == 2
        assert "cmdstat_evalsha" not in commands and "cmdstat_eval" not in commands
        assert broker.conn.lrange("tq:{default}:pending", 0, -1) == [b"b", b"a"]


def test_a_pipelined_call_whose_function_went_missing_is_sent_again_and_the_library_loaded(tmp_path):
    with own_broker(tmp_path) as broker:
        assert enqueue_pipelined(broker, "a") == [True]
        delete_library(broker.conn)
        assert enqueue_pipelined(broker, "b") == [False]  # no error: sent again once the library was back
        assert library_loaded(broker.conn)
        assert broker.conn.lrange("tq:{default}:pending", 0, -1) == [b"b", b"a"]
        assert broker.conn.info("commandstats")["cmdstat_fcall"]["calls"] == 3  # a, b refused, (the load), b again


def test_over_maxmemory_a_pipelined_enqueue_is_refused_as_with_evalsha(tmp_path):
    """A function is refused before it runs over maxmemory: the call is sent again as a script, which gives
    the script's own reply (the enqueue is refused at its first write, nothing written)."""
    with own_broker(tmp_path, "--maxmemory-policy", "noeviction") as broker:
        assert enqueue_pipelined(broker, "a") == [True]
        broker.conn.config_set("maxmemory", 1)
        try:
            (outcome,) = enqueue_pipelined(broker, "b")
        finally:
            broker.conn.config_set("maxmemory", 0)
        assert isinstance(outcome, EngineError) and "maxmemory" in outcome.message
        assert "cmdstat_evalsha" in broker.conn.info("commandstats")  # the second try, as a script
        assert broker.conn.lrange("tq:{default}:pending", 0, -1) == [b"a"]
        assert not broker.conn.exists("tq:{default}:t:b")
