"""The task page's timeline: every attempt (worker, dequeued, ended, duration, outcome, error, lease token) from
the queue's event stream, and from the exported event files once the stream has trimmed them; the operator
actions on the task from the audit log; its workflow."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from taskq.queues.engine.broker import Broker
from taskq.queues.engine.export_store import StreamEntry
from taskq.queues.history.event_files import write_batch

pytestmark = pytest.mark.django_db


def attempt_rows(body: str) -> list[list[str]]:
    table = body.split('<table class="data timeline">', 1)[1].split("</table>", 1)[0]
    rows = re.findall(r"<tr><td>(\d+)</td>(.*?)</tr>", table, re.S)
    return [
        [n, *[re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", rest, re.S)]]
        for n, rest in rows
    ]


def test_attempts_from_the_stream_with_their_lease_tokens_and_operator_actions(operator_client, seed, redis_url):
    task_id = seed.retry(error="SMTP 451 greylisted", retention=600)  # attempt 1 fails into retry
    operator_client.post(reverse("taskq:task-batch", args=["default"]), {"task_ids": [task_id], "action": "run"})
    broker = Broker(redis_url)
    (leased,) = broker.run(broker.transitions.dequeue("default", 1, 60, "host-9:1:abc", "tok-b-"))
    broker.run(broker.transitions.complete("default", [(task_id, leased.token, 600.0)], "host-9:1:abc"))
    broker.close()
    rows = attempt_rows(operator_client.get(reverse("taskq:task", args=["default", task_id])).content.decode())
    assert [(r[0], r[1], r[6], r[7], r[8]) for r in rows] == [
        ("1", "test-worker", "failed, to retry", "SMTP 451 greylisted", "tok-1"),
        ("2", "host-9:1:abc", "succeeded", "", "tok-b-1"),
    ]
    body = operator_client.get(reverse("taskq:task", args=["default", task_id])).content.decode()
    assert "From the queue&#x27;s event stream." in body or "From the queue's event stream." in body
    actions = body.split("<h2>Operator actions</h2>", 1)[1]
    assert "otto" in actions and "run" in actions


def test_attempts_come_back_from_the_exported_files_once_the_stream_trimmed_them(
    viewer_client, seed, redis_client, settings, tmp_path
):
    settings.TASKS_EVENT_EXPORT_DIR = str(tmp_path)
    task_id = seed.archived(error="bounced")
    stream = "tq:{default}:events"
    entries = [
        StreamEntry(entry_id.decode(), {k.decode(): v.decode() for k, v in fields.items()})
        for entry_id, fields in redis_client.xrange(stream)
    ]
    write_batch(tmp_path, "default", entries)
    redis_client.xtrim(stream, maxlen=0)
    body = viewer_client.get(reverse("taskq:task", args=["default", task_id])).content.decode()
    rows = attempt_rows(body)
    assert [(r[0], r[6], r[7], r[8]) for r in rows] == [("1", "failed, archived", "bounced", "tok-1")]
    assert "exported event files" in body


def test_a_workflow_member_links_to_its_workflow(viewer_client, seed, redis_client):
    task_id = seed.pending()
    redis_client.hset(f"tq:{{default}}:t:{task_id}", mapping={"wf": "wf-1", "role": "on_error"})
    body = viewer_client.get(reverse("taskq:task", args=["default", task_id])).content.decode()
    assert f'href="{reverse("taskq:workflow", args=["default", "wf-1"])}"' in body and "(on_error)" in body
    assert "Not run yet." in body


def _entries(count: int, start_ms: int, task_ids: list[str]) -> list[StreamEntry]:
    return [
        StreamEntry(
            f"{start_ms + n}-0",
            {"id": task_ids[n % len(task_ids)], "type": "t", "from": "", "to": "pending", "at": str(start_ms + n)},
        )  # fmt: skip
        for n in range(count)
    ]


def test_exported_history_reads_one_row_group_of_the_files_within_the_tasks_window(tmp_path, monkeypatch):
    import pyarrow.parquet as pq

    from taskq.queues.history import event_files

    ids = [f"task-{n:05d}" for n in range(20_000)]
    write_batch(tmp_path, "big", _entries(20_000, 1_800_000_000_000, ids))  # 4 row groups, sorted by task
    write_batch(tmp_path, "big", _entries(20_000, 1_800_000_100_000, ids))  # 100 s later
    write_batch(tmp_path, "other", _entries(10, 1_800_000_000_000, ["task-00007"]))  # another queue, same id
    (file,) = (tmp_path / "date=2027-01-15").glob(f"{event_files.batch_file_name('big', '1800000000000-0')}")
    assert pq.ParquetFile(file).num_row_groups == 4
    read: list[int] = []
    real = pq.ParquetFile.read_row_group
    monkeypatch.setattr(pq.ParquetFile, "read_row_group", lambda self, i, **kw: read.append(i) or real(self, i, **kw))
    rows = event_files.task_events(tmp_path, "big", "task-00007", (1_800_000_000_000, 1_800_000_010_000))
    assert [(row["queue"], row["at_ms"]) for row in rows] == [("big", 1_800_000_000_007)]
    assert read == [0]  # the first file's first row group only: the later file is outside the window
    everything = event_files.task_events(tmp_path, "big", "task-00007")  # no window: every file of the queue
    assert [row["at_ms"] for row in everything] == [1_800_000_000_007, 1_800_000_100_007]


def test_files_written_before_rows_were_sorted_are_still_read(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from taskq.queues.history import event_files

    columns = event_files.rows_by_date("big", _entries(3, 1_800_000_000_000, ["b", "a", "b"]))["2027-01-15"]
    old_schema = pa.schema([f for f in event_files.SCHEMA if f.name not in ("lease", "started_ms")])
    folder = tmp_path / "date=2027-01-15"
    folder.mkdir()
    table = pa.Table.from_pydict({k: v for k, v in columns.items() if k in old_schema.names}, schema=old_schema)
    pq.write_table(table, folder / event_files.batch_file_name("big", "1800000000000-0"))
    rows = event_files.task_events(tmp_path, "big", "b", (1_799_999_999_000, 1_800_000_001_000))
    assert [row["at_ms"] for row in rows] == [1_800_000_000_000, 1_800_000_000_002]
