"""The demo ``make run`` starts lives in ``demo/``, outside the product: its settings add the app, its handlers
register, and ``demo_traffic`` enqueues what it says, run as run-demo.sh runs it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from taskq.queues.engine import Inspector
from taskq.queues.engine.handlers import registry
from taskq.worker.discovery import import_modules

ROOT = Path(__file__).resolve().parents[2]


def test_demo_traffic_enqueues_a_burst_then_a_trickle_under_the_demo_settings(redis_url, redis_client):
    result = subprocess.run(
        [sys.executable, "manage.py", "demo_traffic", "--count", "53", "--rate", "50"],
        cwd=ROOT,
        env={**os.environ, "REDIS_URL": redis_url, "DJANGO_SETTINGS_MODULE": "demo.settings"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert "enqueued a burst of 50 demo tasks" in result.stdout and "enqueued 53 demo tasks" in result.stdout
    inspector = Inspector(redis_url)
    queues = {q: inspector.queue_info(q) for q in inspector.queues()}
    assert set(queues) <= {"critical", "default", "low"}
    # and the 7 Django tasks of demo.django_tasks, enqueued through the framework (demo/settings.py's TASKS)
    assert "enqueued 7 Django tasks" in result.stdout
    assert sum(info.size for info in queues.values()) == 53 + 7


def test_the_console_settings_alone_do_not_know_the_demo():
    result = subprocess.run(
        [sys.executable, "manage.py", "demo_traffic", "--count", "1"],
        cwd=ROOT,
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "taskq.console.settings"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode != 0 and "Unknown command: 'demo_traffic'" in result.stderr


def test_the_demo_handlers_register_every_type_the_traffic_sends():
    import_modules(["demo.tasks"])
    registered = set(registry.types())
    assert {"email:deliver", "image:resize", "report:flaky", "payment:refund"} <= registered
