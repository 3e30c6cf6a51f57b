"""The HTTP API under TASKS_REDACT: tokens are machine credentials, and a token that may consume a queue reads
every payload of it anyway, so the API returns real payloads (docs/console.md, "Redaction")."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.django_db

Q = "/api/v1/queues/jobs"
PAYLOAD = {"card": "4111-1111-1111-1111", "amount": 5}


@pytest.mark.parametrize("task_type", ["billing:charge", "user:renew"])  # a type rule; a key rule
def test_the_api_returns_real_payloads_of_redacted_tasks(api, settings, task_type):
    settings.TASKS_REDACT = {"types": ["billing:"], "keys": ["card"]}
    task_id = api.post(f"{Q}/tasks", {"type": task_type, "payload": PAYLOAD}).json()["id"]
    assert api.get(f"{Q}/tasks/{task_id}").json()["payload"] == PAYLOAD
    assert api.get(f"{Q}/peek").json()["task"]["payload"] == PAYLOAD
    [delivered] = api.post("/api/v1/consume", {"queues": ["jobs"], "ttr": 30}).json()["tasks"]
    assert delivered["payload"] == PAYLOAD
