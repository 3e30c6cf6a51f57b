"""The task page's timeline: every attempt (worker, dequeued, ended, duration, outcome, error, lease token) from
the queue's event stream, and from the exported event files once the stream has trimmed them; the operator
actions on the task from the audit log; its workflow."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from queues.engine.broker import Broker
from queues.engine.export_store import StreamEntry
from queues.history.events import write_batch

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
    operator_client.post(reverse("task-batch", args=["default"]), {"task_ids": [task_id], "action": "run"})
    broker = Broker(redis_url)
    (leased,) = broker.run(broker.transitions.dequeue("default", 1, 60, "host-9:1:abc", "tok-b-"))
    broker.run(broker.transitions.complete("default", [(task_id, leased.token, 600.0)], "host-9:1:abc"))
    broker.close()
    rows = attempt_rows(operator_client.get(reverse("task", args=["default", task_id])).content.decode())
    assert [(r[0], r[1], r[6], r[7], r[8]) for r in rows] == [
        ("1", "test-worker", "failed, to retry", "SMTP 451 greylisted", "tok-1"),
        ("2", "host-9:1:abc", "succeeded", "", "tok-b-1"),
    ]
    body = operator_client.get(reverse("task", args=["default", task_id])).content.decode()
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
    body = viewer_client.get(reverse("task", args=["default", task_id])).content.decode()
    rows = attempt_rows(body)
    assert [(r[0], r[6], r[7], r[8]) for r in rows] == [("1", "failed, archived", "bounced", "tok-1")]
    assert "exported event files" in body


def test_a_workflow_member_links_to_its_workflow(viewer_client, seed, redis_client):
    task_id = seed.pending()
    redis_client.hset(f"tq:{{default}}:t:{task_id}", mapping={"wf": "wf-1", "role": "on_error"})
    body = viewer_client.get(reverse("task", args=["default", task_id])).content.decode()
    assert f'href="{reverse("workflow", args=["default", "wf-1"])}"' in body and "(on_error)" in body
    assert "Not run yet." in body
