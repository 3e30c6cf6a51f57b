"""End to end over real HTTP: a daphne server on a free port in 8501-8510 (its own SQLite database, the test
Redis), and a consumer that knows nothing but ``http.client`` and JSON."""

from __future__ import annotations

import http.client
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.ports import free_port

ROOT = Path(__file__).resolve().parents[2]
PORTS = range(8501, 8511)


class Http:
    def __init__(self, port: int, token: str) -> None:
        self.port, self.token = port, token

    def call(self, method: str, path: str, body: Any = None, token: str | None = None) -> tuple[int, Any]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=90)
        headers = {"Content-Type": "application/json"}
        token = self.token if token is None else token
        if token:
            headers["Authorization"] = f"Bearer {token}"
        try:
            conn.request(method, path, None if body is None else json.dumps(body), headers)
            response = conn.getresponse()
            raw = response.read()
        finally:
            conn.close()
        return response.status, (json.loads(raw) if raw else None)


@pytest.fixture(scope="module")
def server(redis_url, tmp_path_factory):
    import redis

    redis.Redis.from_url(redis_url).flushdb()
    env = {
        **os.environ,
        "REDIS_URL": redis_url,
        "TASKS_API_RECOVERY_SKEW_SECONDS": "0",
        "DATABASE_URL": f"sqlite:///{tmp_path_factory.mktemp('e2e') / 'db.sqlite3'}",
        "LOG_LEVEL": "WARNING",
    }
    manage = [sys.executable, str(ROOT / "manage.py")]
    subprocess.run([*manage, "migrate", "-v", "0"], env=env, cwd=ROOT, check=True)

    def token(name: str, queues: str) -> str:
        out = subprocess.run(
            [*manage, "tasks", "token", "create", "--name", name, "--queues", queues, "--json"],
            env=env,
            cwd=ROOT,
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        return json.loads(out)["token"]

    tokens = {"all": token("e2e", "jobs,mail"), "mail": token("mail-only", "mail")}
    port = free_port(PORTS)
    proc = subprocess.Popen(
        [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "taskq.console.asgi:application"],
        env=env,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(300):  # readiness, not a timing assertion
            if proc.poll() is not None:
                pytest.fail("daphne exited at start")
            try:
                if Http(port, "").call("GET", "/api/v1/openapi.json")[0] == 200:
                    break
            except OSError:
                time.sleep(0.1)
        yield port, tokens
    finally:
        proc.terminate()
        proc.wait(timeout=20)
        redis.Redis.from_url(redis_url).flushdb()


@pytest.fixture
def api(server):
    port, tokens = server
    return Http(port, tokens["all"])


def test_publish_consume_ack(api):
    status, created = api.call("POST", "/api/v1/queues/jobs/tasks", {"type": "resize", "payload": {"w": 64}})
    assert status == 201
    status, got = api.call("POST", "/api/v1/consume", {"queues": ["jobs"], "ttr": 30, "timeout": 5})
    assert status == 200
    [task] = got["tasks"]
    assert task["id"] == created["id"] and task["payload"] == {"w": 64}
    assert api.call("POST", f"/api/v1/queues/jobs/tasks/{task['id']}/ack", {"lease": task["lease"]})[0] == 204
    assert api.call("GET", "/api/v1/queues/jobs/size")[1]["size"] == 0


def test_lease_expiry_redelivers(api):
    _, created = api.call("POST", "/api/v1/queues/jobs/tasks", {"type": "slow"})
    _, first = api.call("POST", "/api/v1/consume", {"queues": ["jobs"], "ttr": 0.5})
    [lost] = first["tasks"]
    # The consumer "crashes": nothing acks. The next consume's long poll wakes when the lease runs out.
    _, second = api.call("POST", "/api/v1/consume", {"queues": ["jobs"], "ttr": 30, "timeout": 30})
    [again] = second["tasks"]
    assert again["id"] == created["id"] and again["retried"] == 1
    status, body = api.call("POST", f"/api/v1/queues/jobs/tasks/{lost['id']}/ack", {"lease": lost["lease"]})
    assert status == 409 and body["error"] == "lease_lost"
    assert api.call("POST", f"/api/v1/queues/jobs/tasks/{again['id']}/ack", {"lease": again["lease"]})[0] == 204


def test_fail_retry_dead_letter_respawn(api):
    _, created = api.call("POST", "/api/v1/queues/jobs/tasks", {"type": "flaky", "tries": 2})
    task_id = created["id"]
    for expected in ("retry", "archived"):
        _, got = api.call("POST", "/api/v1/consume", {"queues": ["jobs"], "timeout": 10})
        [task] = got["tasks"]
        status, failed = api.call(
            "POST",
            f"/api/v1/queues/jobs/tasks/{task_id}/fail",
            {"lease": task["lease"], "error": "upstream 502", "delay": 0},
        )
        assert status == 200 and failed["state"] == expected
    _, dead = api.call("GET", "/api/v1/queues/jobs/deadletters")
    assert dead["size"] == 1 and dead["tasks"][0]["last_error"] == "upstream 502"
    assert api.call("POST", "/api/v1/queues/jobs/respawn", {"limit": 10})[1] == {"respawned": 1}
    _, got = api.call("POST", "/api/v1/consume", {"queues": ["jobs"], "timeout": 10})
    [task] = got["tasks"]
    assert task["id"] == task_id and task["retried"] == 2
    assert api.call("POST", f"/api/v1/queues/jobs/tasks/{task_id}/ack", {"lease": task["lease"]})[0] == 204


def test_tokens_and_scopes(server):
    port, tokens = server
    mail = Http(port, tokens["mail"])
    assert mail.call("POST", "/api/v1/queues/mail/tasks", {"type": "send"})[0] == 201
    status, body = mail.call("POST", "/api/v1/queues/jobs/tasks", {"type": "send"})
    assert status == 403 and body["error"] == "permission_denied"
    status, body = mail.call("GET", "/api/v1/queues/mail/size", token="")
    assert status == 401 and body["error"] == "unauthenticated"
    assert mail.call("GET", f"/api/v1/queues/mail/size?token={tokens['mail']}", token="")[0] == 401
    assert mail.call("GET", "/api/v1/queues/mail/size", token="tq_forged")[0] == 401


def raw_post(port: int, token: str, path: str, body: Any) -> tuple[int, str, Any]:
    """POST raw bytes, or an iterable of chunks (sent with Transfer-Encoding: chunked, no Content-Length)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=90)
    headers = {"Content-Type": "application/json", "Authorization": f"Bearer {token}"}
    try:
        conn.request("POST", path, body, headers, encode_chunked=not isinstance(body, bytes))
        response = conn.getresponse()
        raw = response.read()
    finally:
        conn.close()
    return response.status, response.getheader("Content-Type", ""), json.loads(raw)


def test_oversized_and_deep_bodies_answer_json(server):
    """Over daphne, as a client in any language sends them: 3 MiB with Content-Length and chunked without one,
    and 10,000-deep JSON; each a JSON error, nothing published."""
    port, tokens = server

    def size() -> int:
        status, doc = Http(port, tokens["all"]).call("GET", "/api/v1/queues/jobs/size")
        return int(doc["size"]) if status == 200 else 0  # 404: the queue never had a task

    before = size()
    three_mib = b'{"type": "t", "payload": "' + b"x" * (3 * 1024 * 1024) + b'"}'
    chunked = iter([three_mib[i : i + 65536] for i in range(0, len(three_mib), 65536)])
    deep = b'{"type": "t", "payload": ' + b"[" * 10_000 + b"]" * 10_000 + b"}"
    cases = [(three_mib, 413, "too_large"), (chunked, 413, "too_large"), (deep, 400, "invalid_argument")]
    for body, status, code in cases:
        got, content_type, doc = raw_post(port, tokens["all"], "/api/v1/queues/jobs/tasks", body)
        assert (got, content_type, doc["error"]) == (status, "application/json", code)
    assert size() == before


def test_names_a_server_would_rewrite_are_refused_and_nothing_is_written(api, redis_url):
    """daphne decodes a path segment that is not UTF-8 with U+FFFD; the API reads the bytes the client sent and
    refuses them (it used to create the queue "h3\ufffdbad", the same for every bad byte). A lone surrogate in
    the body, which Node writes when it cuts a string inside an emoji, is a 400 too, not a 500."""
    import redis

    for segment in ("h3%FFbad", "h3%FEbad", "%ED%A0%80"):
        status, body = api.call("POST", f"/api/v1/queues/{segment}/tasks", {"type": "t"})
        assert (status, body["field"]) == (400, "queue") and "not UTF-8" in body["message"], body
    for doc, field in (({"type": "\ud800"}, "type"), ({"type": "t", "id": "\udfff"}, "id")):
        status, body = api.call("POST", "/api/v1/queues/jobs/tasks", doc)
        assert (status, body["field"]) == (400, field) and "lone surrogate" in body["message"], body
    assert not [key for key in redis.Redis.from_url(redis_url).scan_iter("*h3*")]
