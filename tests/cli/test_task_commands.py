"""``tasks task ls|inspect|cancel|delete|archive|run|deleteall|runall|archiveall|enqueue``."""

from __future__ import annotations

import base64
import re
import time
from datetime import UTC, datetime

import pytest

from taskq.queues.engine.failures import Failure

#: The CLI's actions write the audit log (a Django model), as the console's do.
pytestmark = pytest.mark.django_db

INSPECT_FIELDS = {
    "id",
    "type",
    "queue",
    "state",
    "payload",
    "retried",
    "max_retry",
    "last_error",
    "last_failed_at",
    "result",
    "progress",
    "next_process_at",
    "timeout",
    "deadline",
    "headers",
    "created_at",
    "completed_at",
    "unique_key",
    "retention",
}


def parse_time(text: str) -> datetime:
    moment = datetime.fromisoformat(text)
    assert moment.utcoffset() is not None and moment.utcoffset().total_seconds() == 0, text
    return moment


# -- enqueue ---------------------------------------------------------------------------------------------------


def test_enqueue_prints_only_the_id(cli, seed):
    result = cli("task", "enqueue", "email:deliver", "--payload", '{"to": "ada@example.com"}')
    assert result.code == 0 and result.err == ""
    task_id = result.out.strip()
    assert result.out == task_id + "\n" and len(task_id) == 32
    task = cli("task", "inspect", task_id, "--queue", "default", "--json").json()
    assert task["type"] == "email:deliver"
    assert task["payload"] == '{"to":"ada@example.com"}'
    assert task["state"] == "pending"


def test_enqueue_json_and_every_option(cli):
    doc = cli(
        "--json",
        "task",
        "enqueue",
        "report:build",
        "--payload",
        "[1, 2]",
        "--queue",
        "reports",
        "--id",
        "r-1",
        "--max-retry",
        "3",
        "--timeout",
        "90",
        "--process-in",
        "600",
        "--unique",
        "3600",
        "--retention",
        "86400",
    ).json()
    assert doc["id"] == "r-1"
    task = cli("task", "inspect", "r-1", "--queue", "reports", "--json").json()
    assert task["state"] == "scheduled"
    assert task["max_retry"] == 3
    assert task["timeout"] == 90.0
    assert task["retention"] == 86400.0
    assert task["unique_key"]
    delay = parse_time(task["next_process_at"]).timestamp() - time.time()
    assert 590 < delay <= 600


def test_enqueue_binary_payload_from_base64(cli):
    raw = b"\xff\x00\xfe binary"
    task_id = cli("task", "enqueue", "blob", "--payload-base64", base64.b64encode(raw).decode()).out.strip()
    task = cli("task", "inspect", task_id, "--queue", "default", "--json").json()
    assert task["payload_encoding"] == "base64"
    assert base64.b64decode(task["payload"]) == raw


def test_enqueue_duplicate_id_and_unique_conflicts(cli):
    assert cli("task", "enqueue", "t", "--payload", "1", "--id", "same").code == 0
    result = cli("task", "enqueue", "t", "--payload", "2", "--id", "same", "--json")
    assert (result.code, result.out) == (1, "")
    assert result.err == 'error: a task with id "same" already exists in queue "default"\n'

    assert cli("task", "enqueue", "u", "--payload", "{}", "--unique", "60").code == 0
    result = cli("task", "enqueue", "u", "--payload", "{}", "--unique", "60")
    assert result.code == 1
    assert result.err.startswith('error: a unique task of type "u" with the same payload is already in queue')


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--queue", "bad{name}"], "error: invalid input: queue name \"bad{name}\" may not contain '{' or '}'\n"),
        (
            ["--retention", "1e12"],
            "error: invalid input: retention must be from 0 to 31622400 seconds, got 1000000000000.0\n",
        ),
    ],
)
def test_enqueue_values_the_engine_refuses_are_usage_errors(cli, argv, message):
    result = cli("task", "enqueue", "t", "--payload", "1", *argv)
    assert (result.code, result.out, result.err) == (2, "", message)


# -- inspect ---------------------------------------------------------------------------------------------------


def test_inspect_json_has_every_field(cli, seed):
    task_id = seed.retry(error="SMTP 451: try later", headers={"trace": "abc"})
    task = cli("task", "inspect", task_id, "--queue", "default", "--json").json()
    assert INSPECT_FIELDS <= set(task)
    assert task["id"] == task_id
    assert task["state"] == "retry"
    assert task["retried"] == 1
    assert task["max_retry"] == 25
    assert task["last_error"] == "SMTP 451: try later"
    assert task["headers"] == {"trace": "abc"}
    assert task["result"] is None and task["progress"] is None and task["deadline"] is None
    assert "payload_encoding" not in task  # text payloads are plain
    for name in ("last_failed_at", "next_process_at", "created_at"):
        parse_time(task[name])
    assert task["completed_at"] is None


def test_inspect_shows_the_last_failures_traceback_and_error_group(cli, seed):
    failure = Failure(
        "ValueError", "card 42 declined", "shop:charge", "Traceback (most recent call last):\n  x\x1b[2J\n"
    )
    task_id = seed.retry(failure=failure)
    doc = cli("task", "inspect", task_id, "--queue", "default", "--json").json()
    assert (doc["last_traceback"], doc["error_fingerprint"]) == (failure.traceback, failure.fingerprint)
    text = cli("task", "inspect", task_id, "--queue", "default").out
    assert re.search(rf"^Error group: +{failure.fingerprint}$", text, re.M)
    assert text.endswith("Traceback of the last failure:\nTraceback (most recent call last):\n  x\\x1b[2J\n")


def test_inspect_binary_payload_and_result_are_base64(cli, seed):
    task_id = seed.completed(result=b"\x89PNG\r\n\x1a\n\x00")
    seed_payload = b"\xff\xfe\x00raw"
    other = seed.pending(task_type="blob", payload=seed_payload)
    done = cli("task", "inspect", task_id, "--queue", "default", "--json").json()
    assert done["state"] == "completed"
    assert done["result_encoding"] == "base64"
    assert base64.b64decode(done["result"]) == b"\x89PNG\r\n\x1a\n\x00"
    parse_time(done["completed_at"])
    blob = cli("task", "inspect", other, "--queue", "default", "--json").json()
    assert blob["payload_encoding"] == "base64"
    assert base64.b64decode(blob["payload"]) == seed_payload
    assert "result_encoding" not in blob


def test_inspect_text_result_is_plain(cli, seed):
    task_id = seed.completed(result=b'{"sent":true}')
    task = cli("task", "inspect", task_id, "--queue", "default", "--json").json()
    assert task["result"] == '{"sent":true}'
    assert "result_encoding" not in task
    assert task["retention"] == 600.0


def test_ls_and_inspect_say_how_long_the_last_attempt_ran(cli, seed):
    task_id = seed.completed(ran=3.2)
    unknown = seed.completed()
    docs = {
        t["id"]: t for t in cli("task", "ls", "--queue", "default", "--state", "completed", "--json").json()["tasks"]
    }
    # The worker's clock and the test's differ by the time between seeding and acking: milliseconds.
    assert 3.2 <= docs[task_id]["last_run_seconds"] < 3.4
    assert docs[unknown]["last_run_seconds"] is None
    listing = cli("task", "ls", "--queue", "default", "--state", "completed").out
    assert re.search(r"\bRAN\b", listing.splitlines()[0])
    assert re.search(rf"^{task_id}\b.* 3s ", listing, re.M)
    assert re.search(r"^Ran: +3s$", cli("task", "inspect", task_id, "--queue", "default").out, re.M)
    assert re.search(r"^Ran: +-$", cli("task", "inspect", unknown, "--queue", "default").out, re.M)


def test_inspect_text_output(cli, seed):
    task_id = seed.pending(payload={"to": "x"})
    text = cli("task", "inspect", task_id, "--queue", "default").out
    assert f"ID:            {task_id}" in text
    assert 'Payload:       {"to":"x"}' in text
    assert "State:         pending" in text


def test_text_output_escapes_control_characters(cli, seed):
    task_id = seed.pending(payload=b"\x1b[2Jgotcha\nline")
    text = cli("task", "inspect", task_id, "--queue", "default").out
    assert "\x1b" not in text
    assert "\\x1b[2Jgotcha\\nline" in text
    assert "\x1b" not in cli("task", "ls", "--queue", "default", "--state", "pending").out


def test_inspect_unknown_task_and_queue(cli, seed):
    seed.pending()
    result = cli("task", "inspect", "missing", "--queue", "default", "--json")
    assert (result.code, result.out, result.err) == (1, "", 'error: task "missing" in queue "default" not found\n')
    result = cli("task", "inspect", "missing", "--queue", "nowhere")
    assert (result.code, result.out, result.err) == (1, "", 'error: queue "nowhere" not found\n')


# -- ls --------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("state", ["pending", "scheduled", "retry", "archived", "completed", "active"])
def test_ls_each_state(cli, seed, state):
    task_id = {
        "pending": seed.pending,
        "scheduled": seed.scheduled,
        "retry": seed.retry,
        "archived": seed.archived,
        "completed": seed.completed,
        "active": lambda: seed.active()[0],
    }[state]()
    doc = cli("task", "ls", "--queue", "default", "--state", state, "--json").json()
    assert (doc["queue"], doc["state"], doc["page"], doc["size"]) == ("default", state, 1, 20)
    assert [t["id"] for t in doc["tasks"]] == [task_id]
    assert doc["tasks"][0]["state"] == state
    lines = cli("task", "ls", "--queue", "default", "--state", state).out.splitlines()
    assert lines[0].split()[:3] == ["ID", "TYPE", "PAYLOAD"]
    assert lines[2].startswith(task_id)


def test_ls_pages(cli, seed):
    ids = [seed.pending(payload={"n": n}) for n in range(5)]
    first = cli("task", "ls", "--queue", "default", "--state", "pending", "--size", "2", "--json").json()
    third = cli("task", "ls", "--queue", "default", "--state", "pending", "--page", "3", "--size", "2", "--json").json()
    assert [t["id"] for t in first["tasks"]] == ids[:2]  # next to run first
    assert [t["id"] for t in third["tasks"]] == ids[4:]
    empty = cli("task", "ls", "--queue", "default", "--state", "pending", "--page", "9")
    assert empty.out == 'No pending tasks in queue "default" on page 9.\n'


def test_ls_retry_table_shows_the_error(cli, seed):
    seed.retry(error="connection reset")
    lines = cli("task", "ls", "--queue", "default", "--state", "retry").out.splitlines()
    assert "LAST ERROR" in lines[0]
    assert "connection reset" in lines[2]


def test_ls_unknown_queue_and_oversized_page(cli, seed):
    assert cli("task", "ls", "--queue", "none", "--state", "pending").code == 1
    seed.pending()
    result = cli("task", "ls", "--queue", "default", "--state", "pending", "--size", "1001")
    assert (result.code, result.err) == (2, "error: invalid input: size must be between 1 and 1000, got 1001\n")


# -- single-task actions ------------------------------------------------------------------------------------------


def state_of(cli, task_id: str) -> str:
    return cli("task", "inspect", task_id, "--queue", "default", "--json").json()["state"]


def test_run_archive_delete(cli, seed):
    task_id = seed.scheduled()
    assert cli("task", "run", task_id, "--queue", "default", "--json").json() == {
        "id": task_id,
        "queue": "default",
        "action": "run",
        "ok": True,
    }
    assert state_of(cli, task_id) == "pending"

    result = cli("task", "archive", task_id, "--queue", "default")
    assert result.out == f'Archived task "{task_id}" of queue "default"\n'
    assert state_of(cli, task_id) == "archived"

    assert cli("task", "delete", task_id, "--queue", "default", "--json").json()["action"] == "delete"
    gone = cli("task", "inspect", task_id, "--queue", "default")
    assert gone.code == 1


def test_actions_on_a_missing_task(cli, seed):
    seed.pending()
    for name in ("run", "archive", "delete", "cancel"):
        result = cli("task", name, "ghost", "--queue", "default", "--json")
        assert (result.code, result.out) == (1, ""), name
        assert result.err == 'error: task "ghost" in queue "default" not found\n', name


def test_actions_refused_by_state(cli, seed):
    active_id, _ = seed.active()
    result = cli("task", "delete", active_id, "--queue", "default")
    assert result.code == 1
    assert result.err.startswith(f'error: cannot delete task "{active_id}" in queue "default": task is active')
    pending_id = seed.pending()
    result = cli("task", "run", pending_id, "--queue", "default")
    assert (result.code, result.err) == (
        1,
        f'error: cannot run task "{pending_id}" in queue "default": task is pending, it cannot be run now\n',
    )


def test_cancel_publishes_to_running_workers(cli, seed, redis_client):
    task_id, _ = seed.active()
    pubsub = redis_client.pubsub()
    pubsub.subscribe(seed.broker.keys.cancel_channel(redis_client.connection_pool.connection_kwargs.get("db", 0)))
    assert pubsub.get_message(timeout=1)["type"] == "subscribe"
    doc = cli("task", "cancel", task_id, "--queue", "default", "--json").json()
    # The channel names the database, so only this test's subscriber hears it.
    assert doc.pop("listeners") == 1
    assert doc == {"id": task_id, "queue": "default", "cancel_requested": True}
    message = pubsub.get_message(timeout=1)
    assert message["data"] == f'["default", "{task_id}"]'.encode()
    pubsub.close()

    text = cli("task", "cancel", task_id, "--queue", "default").out
    assert text.startswith(f'Requested cancellation of task "{task_id}"')


def test_cancel_refuses_a_task_that_is_not_active(cli, seed):
    task_id = seed.pending()
    result = cli("task", "cancel", task_id, "--queue", "default")
    assert result.code == 1
    assert result.err.startswith(f'error: cannot cancel task "{task_id}" in queue "default": ')
    assert "not active" in result.err


# -- bulk actions ------------------------------------------------------------------------------------------------


def test_runall_archiveall_deleteall(cli, seed):
    scheduled = [seed.scheduled() for _ in range(3)]
    doc = cli("task", "runall", "--queue", "default", "--state", "scheduled", "--json").json()
    assert doc == {"queue": "default", "state": "scheduled", "action": "run_all", "count": 3}
    assert {state_of(cli, t) for t in scheduled} == {"pending"}

    result = cli("task", "archiveall", "--queue", "default", "--state", "pending")
    assert result.out == 'Archived 3 pending tasks of queue "default"\n'
    assert cli("queue", "inspect", "default", "--json").json()["archived"] == 3

    assert cli("task", "deleteall", "--queue", "default", "--state", "archived", "--json").json()["count"] == 3
    info = cli("queue", "inspect", "default", "--json").json()
    assert info["size"] == 0

    assert cli("task", "deleteall", "--queue", "default", "--state", "retry").out == (
        'Deleted 0 retry tasks of queue "default"\n'
    )


def test_bulk_on_unknown_queue(cli):
    result = cli("task", "runall", "--queue", "ghost", "--state", "retry")
    assert (result.code, result.err) == (1, 'error: queue "ghost" not found\n')


def test_times_are_utc_iso8601(cli, seed):
    task_id = seed.archived()
    task = cli("task", "inspect", task_id, "--queue", "default", "--json").json()
    failed = parse_time(task["last_failed_at"])
    assert abs(failed.timestamp() - datetime.now(UTC).timestamp()) < 60
    assert task["last_failed_at"].endswith("+00:00")


def test_non_ascii_text_survives_json(cli, seed):
    task_id = seed.pending(payload={"name": "Zoë ✓"})
    result = cli("task", "inspect", task_id, "--queue", "default", "--json")
    assert result.out.isascii()  # valid JSON whatever the terminal's encoding
    assert result.json()["payload"] == '{"name":"Zoë ✓"}'
    assert "Zoë ✓" in cli("task", "inspect", task_id, "--queue", "default").out


def test_tables_show_the_last_line_of_a_traceback(cli, seed):
    seed.archived(error='Traceback (most recent call last):\n  File "x.py", line 1\nValueError: bad address\n')
    row = cli("task", "ls", "--queue", "default", "--state", "archived").out.splitlines()[2]
    assert row.endswith("ValueError: bad address")
    assert "Traceback" not in row
