"""Failures: one line on stderr, nothing on stdout, status 1 (operational) or 2 (bad input), never a traceback."""

from __future__ import annotations

import argparse
import json

import pytest

from taskq.queues.cli.main import describe
from taskq.queues.engine import errors
from taskq.queues.engine.inspector import Inspector

UNREACHABLE = "redis://127.0.0.1:1/3"  # nothing listens on port 1: the connection is refused at once


@pytest.mark.parametrize(
    "argv",
    [
        ["stats"],
        ["queue", "ls"],
        ["queue", "inspect", "default"],
        ["queue", "pause", "default"],
        ["task", "ls", "--queue", "default", "--state", "pending"],
        ["server", "ls"],
        ["task", "enqueue", "t", "--payload", "{}"],
    ],
)
def test_redis_unreachable(settings, argv):
    settings.REDIS_URL = UNREACHABLE
    from .helpers import invoke

    result = invoke("--json", *argv)
    assert (result.code, result.out) == (1, "")
    assert len(result.err_lines) == 1
    assert result.err.startswith("error: Redis is unreachable: ")
    assert "Traceback" not in result.err


def test_stray_prints_during_a_command_do_not_reach_stdout(cli, seed, monkeypatch, capsys):
    seed.pending()
    original = Inspector.queue_info

    def noisy(self, queue):
        print("a library chatting on stdout")
        return original(self, queue)

    monkeypatch.setattr(Inspector, "queue_info", noisy)
    result = cli("queue", "inspect", "default", "--json")
    assert json.loads(result.out)["queue"] == "default"
    assert "a library chatting on stdout" in result.err


def test_unexpected_exceptions_are_one_line(cli, seed, monkeypatch):
    seed.pending()

    def broken(self, queue):
        raise RuntimeError("something\nbroke")

    monkeypatch.setattr(Inspector, "queue_info", broken)
    result = cli("queue", "inspect", "default")
    assert (result.code, result.out) == (1, "")
    assert result.err == "error: internal error: RuntimeError: something broke\n"


def args(**values) -> argparse.Namespace:
    return argparse.Namespace(**{"command_name": "delete", "queue": "q", **values})


@pytest.mark.parametrize(
    "exc, namespace, expected",
    [
        (
            errors.ValidationError("page must be an integer", op="x"),
            args(),
            ("invalid input: page must be an integer", 2),
        ),
        (errors.QueueNotFoundError("no queue named 'q'"), args(), ('queue "q" not found', 1)),
        (errors.TaskNotFoundError("t1"), args(id="t1"), ('task "t1" in queue "q" not found', 1)),
        (
            errors.QueueNotEmptyError("3 tasks left; force to delete them"),
            args(command_name="rm", force=False),
            ('cannot delete queue "q": 3 tasks left; use --force to delete them too', 1),
        ),
        (
            errors.FailedPreconditionError("task is active; cancel it before deleting"),
            args(id="t1"),
            ('cannot delete task "t1" in queue "q": task is active; cancel it before deleting', 1),
        ),
        (
            errors.FailedPreconditionError("not paused"),
            args(command_name="resume"),
            ('cannot resume queue "q": not paused', 1),
        ),
        (
            errors.FailedPreconditionError("x"),
            args(command_name="runall", state="retry"),
            ('cannot run all retry tasks in queue "q": x', 1),
        ),
        (errors.TaskIdConflictError("1"), args(task_id="t1"), ('a task with id "t1" already exists in queue "q"', 1)),
        (
            errors.DuplicateTaskError("1"),
            args(type="email"),
            (
                'a unique task of type "email" with the same payload is already in queue "q";'
                " it was not enqueued again",
                1,
            ),
        ),
        (
            errors.RedisUnavailableError("Redis is unreachable: refused", op="x"),
            args(),
            ("Redis is unreachable: refused", 1),
        ),
        (errors.EngineError("odd", op="x"), args(), ("odd (internal)", 1)),
    ],
)
def test_engine_errors_map_to_messages_and_codes(exc, namespace, expected):
    assert describe(exc, namespace) == expected


def test_actions_on_a_keyspace_at_another_key_layout_fail_naming_both_and_change_nothing(cli, seed, redis_client):
    from taskq.queues import handles

    archived, pending = seed.archived(), seed.pending()
    redis_client.set("tq:layout", "2")  # a newer release migrated the keyspace; this CLI is the old one
    handles.reset()  # an inspector of an earlier test would trust its last check for a second
    before = {key: redis_client.dump(key) for key in redis_client.keys("*")}
    layouts = "the Redis keyspace has key layout 2, but this taskq reads and writes layout 1: upgrade this process"
    for argv, what in [
        (["queue", "pause", "default"], 'pause queue "default"'),
        (["queue", "rm", "default", "--force"], 'delete queue "default"'),
        (["task", "run", archived, "--queue", "default"], f'run task "{archived}" in queue "default"'),
        (["task", "cancel", pending, "--queue", "default"], f'cancel task "{pending}" in queue "default"'),
        (
            ["task", "deleteall", "--queue", "default", "--state", "pending", "--json"],
            'delete all pending tasks in queue "default"',
        ),
    ]:
        result = cli(*argv)
        assert (result.code, result.out) == (1, ""), argv
        assert result.err == f"error: cannot {what}: {layouts} (nothing was written)\n"
    assert {key: redis_client.dump(key) for key in redis_client.keys("*")} == before
