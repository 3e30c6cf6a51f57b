"""Worker configuration: --queues parsing, intervals derived from the lease, handler discovery, bad input."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from taskq.queues.engine import ValidationError
from taskq.worker.config import WorkerConfig, parse_queues
from taskq.worker.discovery import import_app_tasks, import_modules
from taskq.worker.ordering import QueueOrder

REPO = Path(__file__).resolve().parents[2]


def test_parse_queues():
    assert parse_queues("critical=6,default=3,low=1") == {"critical": 6, "default": 3, "low": 1}
    assert parse_queues(" emails , reports=2 ") == {"emails": 1, "reports": 2}


@pytest.mark.parametrize(
    "spec, message",
    [
        ("", "no queues"),
        ("a=x", "must be an integer"),
        ("a=0", "between 1 and 1000"),
        ("{a}=1", "may not contain"),
        ("a\x01=1", "control characters"),
    ],
)
def test_parse_queues_rejects_bad_specs(spec, message):
    with pytest.raises(ValidationError, match=message):
        parse_queues(spec)


def test_intervals_default_to_fractions_of_the_lease():
    config = WorkerConfig(lease_seconds=12)
    assert (config.heartbeat_every, config.recoverer_every, config.skew) == (2, 6, 2)
    config = WorkerConfig(lease_seconds=12, heartbeat_interval=1, recoverer_interval=3, clock_skew=0)
    assert (config.heartbeat_every, config.recoverer_every, config.skew) == (1, 3, 0)


def test_fetch_on_ack_and_the_ack_linger_come_from_the_command_line_or_their_defaults():
    from taskq.worker.management.commands.taskworker import Command

    parser = Command().create_parser("manage.py", "taskworker")
    given = Command.config(vars(parser.parse_args(["--no-fetch-on-ack", "--ack-linger", "0"])))
    assert (given.fetch_on_ack, given.ack_linger) == (False, 0.0)
    default = Command.config(vars(parser.parse_args([])))
    assert (default.fetch_on_ack, default.ack_linger) == (True, 0.002)


def test_prefetch_defaults_to_five_times_the_concurrency_at_most_50():
    assert [WorkerConfig(concurrency=c).prefetch for c in (1, 4, 10, 200)] == [5, 20, 50, 50]
    assert WorkerConfig(concurrency=10, prefetch=0).prefetch == 0


@pytest.mark.parametrize(
    "field, value",
    [
        ("concurrency", 0),
        ("lease_seconds", 0),
        ("shutdown_timeout", -1),
        ("prefetch", -1),
        ("prefetch", 1001),
        ("prefetch", 2.5),
        ("ack_linger", -0.001),
        ("ack_linger", 0.5),
        ("ack_linger", "2ms"),
    ],
)
def test_config_rejects_bad_values(field, value):
    with pytest.raises(ValidationError):
        WorkerConfig(**{field: value})


def test_strict_order_is_by_weight_and_weighted_order_favours_heavy_queues():
    assert QueueOrder({"low": 1, "high": 9, "mid": 5}, strict=True).next() == ["high", "mid", "low"]
    import random

    order = QueueOrder({"heavy": 9, "light": 1}, rng=random.Random(7))
    firsts = [order.next()[0] for _ in range(1000)]
    assert 800 < firsts.count("heavy") < 990  # about 9 in 10, and the light queue is never starved
    assert all(sorted(order.next()) == ["heavy", "light"] for _ in range(10))


def test_discovery_imports_tasks_modules_of_apps_and_named_modules():
    found = import_app_tasks(["tests.worker.fixture_app", "tests.worker.no_such_app", "taskq.queues"])
    assert found == ["tests.worker.fixture_app.tasks"]
    from tests.worker.fixture_app.tasks import discovered

    assert "fixture:discovered" in discovered
    assert import_modules(["demo.tasks"]) == ["demo.tasks"]
    with pytest.raises(ImportError):
        import_modules(["no.such.module"])


@pytest.mark.parametrize(
    "args, message",
    [
        (["--queues", "a=zero"], "must be an integer"),
        (["--concurrency", "0"], "concurrency"),
        (["--prefetch", "-1"], "prefetch must be between 0 and 1000"),
        (["--ack-linger", "1"], "ack linger must be at most 0.1 s"),
        (["--import", "no.such.module"], "cannot import handlers"),
    ],
)
def test_taskworker_refuses_bad_input_with_one_clear_line(args, message, redis_url):
    result = subprocess.run(
        [sys.executable, "manage.py", "taskworker", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", "REDIS_URL": redis_url},
    )
    assert result.returncode != 0
    assert message in result.stderr
    assert "Traceback" not in result.stderr
