"""Transition scripts as Redis functions: loaded once, called with FCALL where the server has functions, loaded
again when they went missing, and EVALSHA where the server refuses FUNCTION (Redis 6.2, a hardened setup) or the
pool was told to keep it. Every table-driven script case runs both ways as well (script_runs.run_case)."""

from __future__ import annotations

import pytest
import redis

from queues.engine import EngineError, TaskMessage, functions
from queues.engine.broker import Broker
from queues.engine.transitions import Placement
from tests.redis_servers import started_redis

LIBRARY = functions.library()[0]


def library_loaded(r: redis.Redis) -> bool:
    return bool(r.execute_command("FUNCTION", "LIST", "LIBRARYNAME", LIBRARY))


def delete_library(r: redis.Redis) -> None:
    # Only this taskq version's library (its name carries the hash of its Lua): never FUNCTION FLUSH.
    if library_loaded(r):
        r.execute_command("FUNCTION", "DELETE", LIBRARY)


def test_a_library_that_went_missing_is_loaded_again_and_the_call_retried(tmp_path):
    # A server of its own: the library is server-wide, and deleting it on the shared server would pull it from under
    # every other test process's workers and schedulers at once.
    with started_redis(tmp_path) as url:
        broker = Broker(url)
        try:
            assert list(broker.run(broker.transitions.dequeue("default", 1, 30, "w1", "tok-"))) == []
            assert functions.usable(broker.conn) and library_loaded(broker.conn)
            delete_library(broker.conn)  # as FUNCTION FLUSH, or a restart without persistence, would
            assert list(broker.run(broker.transitions.dequeue("default", 1, 30, "w1", "tok-"))) == []
            assert library_loaded(broker.conn)  # the FCALL found no function, loaded the library and ran again
        finally:
            broker.close()


def test_a_pool_told_to_keep_evalsha_never_calls_a_function(tmp_path):
    # A server of its own: a function library is server-wide, so on the shared server another test process (xdist)
    # may load it meanwhile, whatever this pool does.
    with started_redis(tmp_path) as url:
        broker = Broker(url)
        functions.use_evalsha(broker.conn)
        try:
            assert list(broker.run(broker.transitions.dequeue("default", 1, 30, "w1", "tok-"))) == []
            assert not library_loaded(broker.conn)
            commands = broker.conn.info("commandstats")
            assert "cmdstat_evalsha" in commands or "cmdstat_eval" in commands
            assert "cmdstat_fcall" not in commands
        finally:
            broker.close()


def test_a_server_without_function_keeps_evalsha(tmp_path):
    with started_redis(tmp_path, "--rename-command", "FUNCTION", '""') as url:
        broker = Broker(url)
        try:
            client = broker.transitions
            assert list(broker.run(client.dequeue("default", 1, 30, "w1", "tok-"))) == []
            assert not functions.usable(broker.conn)
            commands = broker.conn.info("commandstats")
            assert "cmdstat_evalsha" in commands or "cmdstat_eval" in commands
            assert "cmdstat_fcall" not in commands
        finally:
            broker.close()


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
                assert functions.usable(broker.conn) is not evalsha
            finally:
                broker.close()
