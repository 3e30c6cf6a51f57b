"""spark:submit: a real spark-submit (pyspark's bundled one) as a supervised subprocess."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from spark_support import state_of, wait_for

from taskq.queues.engine import Registry
from tests.worker.worker_support import spark_submit_registry

pytestmark = pytest.mark.spark

APPS = Path(__file__).with_name("apps")


@pytest.fixture
def registry() -> Registry:
    return spark_submit_registry()


def test_submits_an_application_and_keeps_its_output_and_id(make_server, client, inspector):
    make_server()
    info = client.enqueue(
        "spark:submit",
        {"app": str(APPS / "pi_small.py"), "master": "local[1]", "conf": {"spark.ui.enabled": "false"}},
        retention=600,
    )
    final = client.wait(info.id, queue="default", timeout=120)
    assert final.state == "completed", final.last_error
    result = json.loads(final.result)
    assert result["exit_code"] == 0 and "SUM 4950" in result["output"]
    assert result["application_id"].startswith("local-")


def test_exit_code_is_a_failure_with_the_output_tail(make_server, client, inspector):
    make_server()
    info = client.enqueue("spark:submit", {"app": str(APPS / "sleeper.py"), "args": ["fail"]}, max_retry=0)
    wait_for(lambda: state_of(inspector, "default", info.id) == "archived", timeout=120)
    error = inspector.get_task("default", info.id).last_error
    assert "spark-submit exited with 3" in error and "something went wrong" in error


def test_timeout_kills_the_submission(make_server, client, inspector):
    make_server()
    info = client.enqueue("spark:submit", {"app": str(APPS / "sleeper.py")}, timeout=8, max_retry=3)
    wait_for(lambda: state_of(inspector, "default", info.id) == "retry", timeout=120)
    assert "timed out after 8 s" in inspector.get_task("default", info.id).last_error


def test_bad_payload_is_archived_at_once(make_server, client, inspector):
    make_server()
    info = client.enqueue("spark:submit", {"args": "not a list"}, max_retry=5)
    wait_for(lambda: state_of(inspector, "default", info.id) == "archived")
    assert "needs 'app'" in inspector.get_task("default", info.id).last_error
