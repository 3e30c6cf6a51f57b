"""Every endpoint through Django's test client: publish options, consume/ack/fail/extend fenced by the lease,
peek, size, delete, dead letters, and the error statuses (400 naming the field, 404, 409, 503)."""

from __future__ import annotations

import base64

import pytest
from api_support import Api, clear_caches

from taskq.queues import conf

Q = "/api/v1/queues/jobs"


def publish(api: Api, body=None, queue: str = "jobs"):
    return api.post(f"/api/v1/queues/{queue}/tasks", {"type": "email", "payload": {"to": "ada"}, **(body or {})})


def consume(api: Api, **body):
    response = api.post("/api/v1/consume", {"queues": ["jobs"], "ttr": 30, **body})
    assert response.status_code == 200, response.content
    return response.json()["tasks"]


def test_publish_consume_ack(api):
    created = publish(api)
    assert created.status_code == 201
    task_id = created.json()["id"]
    assert created["Location"] == f"{Q}/tasks/{task_id}"
    assert created.json()["state"] == "pending"
    [task] = consume(api)
    assert (task["id"], task["type"], task["payload"], task["payload_encoding"]) == (
        task_id,
        "email",
        {"to": "ada"},
        "json",
    )
    assert task["retried"] == 0 and task["lease"]
    assert api.get(f"{Q}/size").json()["active"] == 1
    assert api.post(f"{Q}/tasks/{task_id}/ack", {"lease": task["lease"]}).status_code == 204
    assert api.get(f"{Q}/tasks/{task_id}").status_code == 404  # done without retention: gone
    again = api.post(f"{Q}/tasks/{task_id}/ack", {"lease": task["lease"]})
    assert again.status_code == 409  # the lease is gone with the task (README: a second ack is lease_lost)


def test_bytes_payload_round_trip_and_options(api):
    raw = bytes(range(256))
    body = {"payload_base64": base64.b64encode(raw).decode(), "tries": 3, "id": "my-id", "headers": {"k": "v"}}
    created = api.post(f"{Q}/tasks", {"type": "blob", **body})
    assert created.status_code == 201 and created.json()["id"] == "my-id"
    [task] = consume(api)
    assert task["payload_encoding"] == "base64" and base64.b64decode(task["payload"]) == raw
    assert task["max_retry"] == 2 and task["headers"] == {"k": "v"}
    assert api.post(f"{Q}/tasks", {"type": "blob", "id": "my-id"}).status_code == 409


def test_delay_makes_a_scheduled_task_and_unique_refuses_a_twin(api):
    created = publish(api, {"delay": 3600, "unique": 60})
    assert created.json()["state"] == "scheduled"
    assert consume(api) == []
    twin = publish(api, {"unique": 60})
    assert twin.status_code == 409 and twin.json()["error"] == "already_exists"


def test_ttl_drops_a_task_that_nobody_consumed_in_time(api, engine):
    created = publish(api, {"ttl": 0.001}).json()
    assert created["deadline"] is not None
    ok = publish(api, {"ttl": 3600}).json()
    [task] = consume(api, count=5)
    assert task["id"] == ok["id"] and task["deadline"] is not None
    assert api.get(f"{Q}/tasks/{created['id']}").status_code == 404
    events = conf.get_inspector().task_events("jobs", created["id"])
    assert events[-1].to_state == "expired" and "ttl" in events[-1].error


def test_fail_retries_then_dead_letters_then_respawn(api):
    task_id = publish(api, {"tries": 2}).json()["id"]
    [task] = consume(api)
    failed = api.post(f"{Q}/tasks/{task_id}/fail", {"lease": task["lease"], "error": "boom", "delay": 0})
    assert failed.status_code == 200 and failed.json()["state"] == "retry"
    assert api.post(f"{Q}/tasks/{task_id}/ack", {"lease": task["lease"]}).status_code == 409  # fenced
    [task] = consume(api)  # the consume's upkeep forwards the due retry
    assert task["retried"] == 1
    failed = api.post(f"{Q}/tasks/{task_id}/fail", {"lease": task["lease"], "error": "boom again"})
    assert failed.json() == {"id": task_id, "queue": "jobs", "state": "archived", "retry_at": None}

    dead = api.get(f"{Q}/deadletters").json()
    assert dead["size"] == 1 and dead["tasks"][0]["id"] == task_id
    assert dead["tasks"][0]["last_error"] == "boom again" and dead["tasks"][0]["state"] == "archived"
    assert api.get(f"{Q}/deadletters/{task_id}").json()["retried"] == 2
    assert api.post(f"{Q}/deadletters/{task_id}/respawn").json() == {"id": task_id, "state": "pending"}
    assert api.get(f"{Q}/deadletters/{task_id}").status_code == 409  # pending now, no dead letter
    [task] = consume(api)
    api.post(f"{Q}/tasks/{task_id}/fail", {"lease": task["lease"], "skip_retry": True})
    assert api.post(f"{Q}/respawn", {"limit": 5}).json() == {"respawned": 1}
    assert api.post(f"{Q}/respawn", {}).json() == {"respawned": 0}


def test_dead_letter_bulk_and_single_delete(api):
    ids = []
    for _ in range(3):
        ids.append(publish(api, {"tries": 1}).json()["id"])
    for task in consume(api, count=3):
        api.post(f"{Q}/tasks/{task['id']}/fail", {"lease": task["lease"]})
    assert api.get(f"{Q}/deadletters", limit=2).json()["size"] == 3
    assert len(api.get(f"{Q}/deadletters", limit=2).json()["tasks"]) == 2
    assert api.delete(f"{Q}/deadletters/{ids[0]}").status_code == 204
    assert api.delete(f"{Q}/deadletters/{ids[0]}").status_code == 404
    assert api.delete(f"{Q}/deadletters?limit=1").json() == {"deleted": 1}
    assert api.delete(f"{Q}/deadletters").json() == {"deleted": 1}
    assert api.get(f"{Q}/size").json()["archived"] == 0


def test_extend_and_the_lease_fence(api):
    task_id = publish(api).json()["id"]
    [task] = consume(api, ttr=5)
    extended = api.post(f"{Q}/tasks/{task_id}/extend", {"lease": task["lease"], "ttr": 120})
    assert extended.status_code == 200 and extended.json()["lease_expires_at"] > task["lease_expires_at"]
    wrong = api.post(f"{Q}/tasks/{task_id}/extend", {"lease": task["lease"] + "x"})
    assert wrong.status_code == 409 and wrong.json()["error"] == "lease_lost"
    assert api.post(f"{Q}/tasks/{task_id}/fail", {"lease": "nope"}).status_code == 409
    assert api.delete(f"{Q}/tasks/{task_id}").status_code == 409  # active: ack or fail it instead


def test_lease_expiry_redelivers_and_refuses_the_late_consumer(api):
    task_id = publish(api).json()["id"]
    [first] = consume(api, ttr=0.2)
    # Long-polls until the lease runs out, then the consume's own upkeep recovers and redelivers it.
    [second] = consume(api, ttr=30, timeout=30)
    assert second["id"] == task_id and second["retried"] == 1 and second["lease"] != first["lease"]
    late = api.post(f"{Q}/tasks/{task_id}/ack", {"lease": first["lease"]})
    assert late.status_code == 409
    assert api.post(f"{Q}/tasks/{task_id}/ack", {"lease": second["lease"]}).status_code == 204


def test_lease_expiry_with_tries_spent_goes_to_the_dead_letters(api):
    task_id = publish(api, {"tries": 1}).json()["id"]
    consume(api, ttr=0.2)
    assert consume(api, timeout=2) == []  # bounded wait; recovery happened during it
    dead = api.get(f"{Q}/deadletters").json()
    assert dead["size"] == 1 and dead["tasks"][0]["id"] == task_id and "ttr expired" in dead["tasks"][0]["last_error"]


def test_long_poll_wakes_on_publish(api, engine):
    import threading

    # From another thread through the engine (the test database is not shared across threads).
    timer = threading.Timer(0.3, lambda: conf.get_client().enqueue("late", queue="jobs"))
    timer.start()
    try:
        [task] = consume(api, timeout=30)
    finally:
        timer.join()
    assert task["type"] == "late"


def test_consume_from_several_queues_in_order_and_count(api):
    publish(api, {"type": "low"}, queue="low")
    for _ in range(3):
        publish(api, {"type": "high"}, queue="high")
    got = api.post("/api/v1/consume", {"queues": ["high", "low"], "count": 2}).json()["tasks"]
    assert [t["type"] for t in got] == ["high", "high"]
    got = api.post("/api/v1/consume", {"queues": ["low", "high"], "count": 5}).json()["tasks"]
    assert [t["type"] for t in got] == ["low"]


def test_peek_size_get_delete(api):
    assert api.get(f"{Q}/peek").status_code == 404  # no such queue yet
    first = publish(api, {"payload": 1}).json()["id"]
    publish(api, {"payload": 2})
    peeked = api.get(f"{Q}/peek").json()["task"]
    assert peeked["id"] == first and peeked["payload"] == 1
    size = api.get(f"{Q}/size").json()
    assert size["pending"] == 2 and size["size"] == 2 and size["paused"] is False
    assert api.get(f"{Q}/tasks/{first}").json()["state"] == "pending"
    assert api.delete(f"{Q}/tasks/{first}").status_code == 204
    assert api.delete(f"{Q}/tasks/{first}").status_code == 404
    assert api.get(f"{Q}/size").json()["pending"] == 1


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/tasks", {}, "type"),
        ("/tasks", {"type": ""}, "type"),
        ("/tasks", {"type": "t", "delay": -1}, "delay"),
        ("/tasks", {"type": "t", "delay": "soon"}, "delay"),
        ("/tasks", {"type": "t", "ttl": 0}, "ttl"),
        ("/tasks", {"type": "t", "tries": 0}, "tries"),
        ("/tasks", {"type": "t", "tries": 1.5}, "tries"),
        ("/tasks", {"type": "t", "unique": True}, "unique"),
        ("/tasks", {"type": "t", "id": "x" * 200}, "id"),
        ("/tasks", {"type": "t", "payload_base64": "***"}, "payload_base64"),
        ("/tasks", {"type": "t", "payload": 1, "payload_base64": ""}, "payload_base64"),
        ("/tasks", {"type": "t", "headers": {"a": 1}}, "headers"),
        ("/tasks", {"type": "t", "bogus": 1}, "bogus"),
        ("/tasks", [1, 2], "body"),
        ("/tasks", b"{not json", "body"),
        ("/tasks/x/ack", {}, "lease"),
        ("/tasks/x/ack", {"lease": 5}, "lease"),
        ("/tasks/x/fail", {"lease": "l", "delay": -3}, "delay"),
        ("/tasks/x/fail", {"lease": "l", "error": 3}, "error"),
        ("/tasks/x/fail", {"lease": "l", "skip_retry": "yes"}, "skip_retry"),
        ("/tasks/x/extend", {"lease": "l", "ttr": 0}, "ttr"),
        ("/respawn", {"limit": 0}, "limit"),
    ],
)
def test_bad_input_is_a_400_naming_the_field(api, path, body, field):
    response = api.post(Q + path, body)
    assert response.status_code == 400, response.content
    assert response.json()["field"] == field and response.json()["error"] == "invalid_argument"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "queues"),
        ({"queues": "jobs"}, "queues"),
        ({"queues": []}, "queues"),
        ({"queues": ["a{b}"]}, "queues"),
        ({"queues": ["q"] * 17}, "queues"),
        ({"queues": ["q"], "ttr": -1}, "ttr"),
        ({"queues": ["q"], "count": 0}, "count"),
        ({"queues": ["q"], "count": 101}, "count"),
        ({"queues": ["q"], "timeout": 61}, "timeout"),
        ({"queues": ["q"], "timeout": "1"}, "timeout"),
        ({"queues": ["q"], "wait": 1}, "wait"),
    ],
)
def test_bad_consume_input(api, body, field):
    response = api.post("/api/v1/consume", body)
    assert response.status_code == 400 and response.json()["field"] == field


def test_bad_path_segments_and_unknown_things(api):
    assert api.get("/api/v1/queues/a%7Bb%7D/size").json()["field"] == "queue"
    assert api.get("/api/v1/queues/a~b/size").status_code == 400
    assert api.get(f"{Q}/tasks/{'x' * 300}").json()["field"] == "id"
    assert api.get(f"{Q}/tasks/nope").status_code == 404  # unknown queue
    publish(api)
    missing = api.get(f"{Q}/tasks/nope")
    assert missing.status_code == 404 and missing.json()["error"] == "not_found"
    assert api.get("/api/v1/nothing/here").status_code == 404
    wrong_method = api.get(f"{Q}/tasks")
    assert wrong_method.status_code == 405 and wrong_method["Allow"] == "POST"
    assert api.client.get("/api/v1/consume", HTTP_AUTHORIZATION=f"Bearer {api.secret}").status_code == 405


def test_queue_names_with_a_slash_are_escaped(api):
    created = api.post("/api/v1/queues/team~2Fjobs/tasks", {"type": "t"})
    assert created.status_code == 201 and created.json()["queue"] == "team/jobs"
    assert created["Location"].startswith("/api/v1/queues/team~2Fjobs/tasks/")
    assert api.get(created["Location"]).json()["queue"] == "team/jobs"
    dots = api.post(f"{Q}/tasks", {"type": "t", "id": ".."})
    assert dots.status_code == 201 and dots["Location"] == f"{Q}/tasks/~2E~2E"
    assert api.get(dots["Location"]).json()["id"] == ".."


@pytest.mark.parametrize("segment", ["~2E~2E", "~2E", "*", "tenant-%3F", "a%5Bb%5D"])
def test_publish_refuses_a_new_queue_named_as_a_path_step_or_a_pattern(api, engine, segment):
    response = api.post(f"/api/v1/queues/{segment}/tasks", {"type": "t"})
    assert response.status_code == 400 and response.json()["field"] == "queue", response.content
    assert "for new tasks" in response.json()["message"]
    assert engine.dbsize() == 0


@pytest.mark.parametrize(("queue", "segment"), [("..", "~2E~2E"), ("*", "*")])
def test_a_queue_already_in_redis_with_such_a_name_stays_reachable(api, engine, monkeypatch, queue, segment):
    from taskq.queues.engine import validation

    with monkeypatch.context() as m:  # as a taskq from before the rule wrote it
        m.setattr(validation, "new_queue_name", validation.queue_name)
        info = conf.get_client().enqueue("t", {"n": 1}, queue=queue, task_id="..")
    url = f"/api/v1/queues/{segment}/tasks/~2E~2E"
    got = api.get(url)
    assert got.status_code == 200 and (got.json()["queue"], got.json()["id"]) == (queue, info.id)
    assert api.get(f"/api/v1/queues/{segment}/size").json()["pending"] == 1
    [task] = consume(api, queues=[queue])
    assert api.post(f"{url}/ack", {"lease": task["lease"]}).status_code == 204


def test_redis_down_is_a_503(api, settings):
    settings.REDIS_URL = "redis://127.0.0.1:1/8"
    clear_caches()
    for response in (
        publish(api),
        api.get(f"{Q}/size"),
        api.post("/api/v1/consume", {"queues": ["jobs"]}),
        api.post(f"{Q}/tasks/x/ack", {"lease": "l"}),
        api.get(f"{Q}/deadletters"),
    ):
        assert response.status_code == 503, response.content
        assert response.json()["error"] == "unavailable"


def test_a_malformed_redis_url_is_a_503_naming_the_setting(api, settings):
    """Under daphne, which runs no system checks (taskq.E103 stops runserver), the API starts and says why."""
    settings.REDIS_URL = "redis://host:notaport/8"
    clear_caches()
    try:
        for response in (
            publish(api),
            api.get(f"{Q}/size"),
            api.post("/api/v1/consume", {"queues": ["jobs"]}),
            api.post(f"{Q}/tasks/x/ack", {"lease": "l"}),
        ):
            assert response.status_code == 503, response.content
            assert response.json()["error"] == "unavailable"
            assert 'REDIS_URL: bad Redis URL "redis://host:notaport/8"' in response.json()["message"]
    finally:
        clear_caches()


def test_a_keyspace_at_another_key_layout_is_a_503_and_stays_untouched(api, redis_client):
    redis_client.set("tq:layout", "2")
    clear_caches()  # a fresh client, which checks the layout before its first write
    response = publish(api)
    assert response.status_code == 503, response.content
    assert response.json()["error"] == "layout_mismatch" and "key layout 2" in response.json()["message"]
    assert redis_client.keys("*") == [b"tq:layout"]


def test_no_csrf_and_no_session_needed(api):
    from django.test import Client

    strict = Client(enforce_csrf_checks=True)
    response = strict.post(
        f"{Q}/tasks", '{"type": "t"}', content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {api.secret}"
    )
    assert response.status_code == 201
