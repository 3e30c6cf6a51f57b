"""``tasks stats`` and ``tasks server ls``."""

from __future__ import annotations

import time

import pytest

from taskq.queues.engine import STATES


def test_stats_json(cli, seed):
    seed.pending()
    seed.archived(queue="critical")
    seed.pending(queue="critical")
    cli("queue", "pause", "critical")
    doc = cli("stats", "--json").json()

    assert [q["queue"] for q in doc["queues"]] == ["critical", "default"]
    critical = doc["queues"][0]
    assert (critical["pending"], critical["archived"], critical["paused"]) == (1, 1, True)

    totals = doc["totals"]
    assert {s: totals[s] for s in STATES} == {
        "pending": 2,
        "active": 0,
        "scheduled": 0,
        "retry": 0,
        "archived": 1,
        "completed": 0,
        "aggregating": 0,
        "waiting": 0,
    }
    assert (totals["size"], totals["queues"], totals["paused"]) == (3, 2, 1)
    assert (totals["processed_today"], totals["failed_today"], totals["error_rate_today"]) == (1, 1, 1.0)
    assert totals["memory_bytes"] > 0

    redis_info = doc["redis"]
    assert redis_info["redis_version"].count(".") == 2
    assert redis_info["used_memory"] > 0
    assert redis_info["uptime_in_seconds"] >= 0


def test_stats_text(cli, seed):
    seed.pending()
    text = cli("stats").out
    for heading in ("Task Count by State", "Task Count by Queue", "Daily Stats", "Redis Info"):
        assert heading in text
    assert "default" in text


def test_stats_with_no_queues(cli):
    doc = cli("--json", "stats").json()
    assert doc["queues"] == []
    assert doc["totals"]["size"] == 0
    assert "No queues." in cli("stats").out


def test_server_ls(cli, seed):
    task_id, _ = seed.active()
    started = int(time.time() * 1000) - 5000
    seed.server(running={task_id: {"id": task_id, "type": "email:deliver", "queue": "default", "started": started}})
    doc = cli("server", "ls", "--json").json()
    [server] = doc["servers"]
    assert server["id"] == "host-1:42"
    assert (server["host"], server["pid"], server["status"], server["concurrency"]) == ("host-1", 42, "active", 8)
    assert server["queues"] == {"default": 3, "critical": 6}
    assert server["started_at"].endswith("+00:00")
    [worker] = server["active"]
    assert worker["id"] == task_id and worker["started"] == started
    assert worker["started_at"].endswith("+00:00")

    lines = cli("server", "ls").out.splitlines()
    assert lines[0].split() == ["ID", "HOST", "PID", "STATE", "ACTIVE", "WORKERS", "QUEUES", "STARTED"]
    assert lines[2].split()[:5] == ["host-1:42", "host-1", "42", "active", "1/8"]
    assert "critical:6, default:3" in lines[2]
    assert "1m30s ago" in lines[2]


def test_server_ls_empty(cli):
    assert cli("server", "ls", "--json").json() == {"servers": [], "ended": []}
    assert cli("server", "ls").out == "No running servers.\n"


def test_server_ls_lists_the_servers_that_ended_with_what_became_of_their_tasks(cli, seed):
    seed.ended_server("host-1:7", tasks=[("default", "t1", "requeued"), ("default", "t2", "finished")])
    [ended] = cli("server", "ls", "--json").json()["ended"]
    assert (ended["id"], ended["how"], ended["reason"]) == ("host-1:7", "graceful", "SIGTERM or SIGINT")
    assert [(t["id"], t["outcome"]) for t in ended["tasks"]] == [("t1", "requeued"), ("t2", "finished")]
    text = cli("server", "ls").out
    assert "Ended in the last hour:" in text and "host-1:7" in text and "graceful" in text


@pytest.mark.django_db
@pytest.mark.parametrize("action", ["quiet", "stop"])
def test_server_quiet_and_stop_ask_through_redis_wait_for_the_ack_and_are_audited(cli, seed, redis_client, action):
    from taskq.queues.models import AuditLog

    seed.server()
    seed.acknowledge("host-1:42", action)  # as the server does when it acts (tests/worker: a real one)
    doc = cli("server", action, "host-1:42", "--json").json()
    assert (doc["server"], doc["requested"], doc["acknowledged"]) == ("host-1:42", action, action)
    assert doc["acknowledged_at"].endswith("+00:00")
    assert redis_client.get("tq:control:host-1:42") == action.encode()
    entry = AuditLog.objects.get()
    assert (entry.action, entry.detail, entry.username.startswith("cli:")) == (
        f"{action}_server",
        "server host-1:42",
        True,
    )
    assert f"Server host-1:42 acknowledged {action}" in cli("server", action, "host-1:42").out
    unwaited = cli("server", action, "host-1:42", "--timeout", "0", "--json").json()
    assert unwaited == {"server": "host-1:42", "requested": action, "acknowledged": None}


@pytest.mark.django_db
def test_no_acknowledgement_in_time_exits_3_with_the_request_made(cli, seed, redis_client):
    seed.server()
    result = cli("server", "quiet", "host-1:42", "--timeout", "0.1", "--json")
    assert (result.code, result.out) == (3, "")
    assert "did not acknowledge within 0.1 s" in result.err and len(result.err_lines) == 1
    assert redis_client.get("tq:control:host-1:42") == b"quiet"  # asked all the same: its heartbeat reads it


@pytest.mark.django_db
def test_server_control_of_an_unknown_server_fails_and_changes_nothing(cli, seed, redis_client):
    from taskq.queues.models import AuditLog

    result = cli("server", "stop", "nobody:1")
    assert result.code == 1 and 'no running server "nobody:1"' in result.err
    for bad, why in (("x" * 400, "server id is 400 characters long"), ("a\nb", "control characters")):
        result = cli("server", "quiet", bad)
        assert result.code == 2 and why in result.err, result.err
    assert cli("server", "stop", "host-1:42", "--timeout", "-1").code == 2
    assert not redis_client.keys("*control*") and not AuditLog.objects.exists()
    usage = cli("server", "quiet")
    assert usage.code == 2 and "ID" in usage.err
