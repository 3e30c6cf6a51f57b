"""The HTTP API on tasks waiting for their dependencies (issue 16): size counts them under ``waiting`` and in
``size``, GET shows the state, DELETE takes one (before, it answered 409 "task is waiting")."""

from __future__ import annotations

from taskq.queues import conf
from taskq.queues.engine import Client

Q = "/api/v1/queues/jobs"


def test_size_get_and_delete_of_a_waiting_task(api):
    with Client(conf.taskq_settings().redis_url, policies=False) as client:
        a = client.enqueue("fetch", b"a", queue="jobs")
        b = client.enqueue("store", b"b", queue="jobs", after=[a.id])
        c = client.enqueue("mail", b"c", queue="jobs", after=[b.id])
    size = api.get(f"{Q}/size").json()
    assert (size["waiting"], size["pending"], size["size"]) == (2, 1, 3)
    assert api.get(f"{Q}/tasks/{b.id}").json()["state"] == "waiting"
    assert api.delete(f"{Q}/tasks/{b.id}").status_code == 204
    assert api.get(f"{Q}/tasks/{b.id}").status_code == 404
    assert api.get(f"{Q}/tasks/{c.id}").json()["state"] == "archived"  # its dependency failed
    assert api.delete(f"{Q}/tasks/{b.id}").status_code == 404
