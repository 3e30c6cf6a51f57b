"""Many long-polling consumers against a real daphne server: the API holds them without exhausting its Redis
connections, and a consume beyond ``TASKS_API_MAX_WAITERS`` gets the documented 429, never a 5xx.

Consumers know nothing but ``http.client`` and JSON, as a consumer in another language would."""

from __future__ import annotations

import http.client
import json
import os
import subprocess
import sys
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Any

import pytest

from tests.ports import free_port

ROOT = Path(__file__).resolve().parents[2]
MAX_WAITERS = 64  # the default, given explicitly so the test does not move with it
CONSUMERS = 200
ROUNDS = 3
TASKS_PER_ROUND = 100

pytestmark = pytest.mark.timeout(600)


class Http:
    def __init__(self, port: int, token: str) -> None:
        self.port, self.token = port, token

    def call(self, method: str, path: str, body: Any = None) -> tuple[int, dict[str, str], Any]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
        headers = {"Content-Type": "application/json", "Authorization": f"Bearer {self.token}"}
        try:
            conn.request(method, path, None if body is None else json.dumps(body), headers)
            response = conn.getresponse()
            raw = response.read()
        finally:
            conn.close()
        return response.status, dict(response.getheaders()), (json.loads(raw) if raw else None)


@pytest.fixture(scope="module")
def api(redis_url, tmp_path_factory):
    import redis

    redis.Redis.from_url(redis_url).flushdb()
    env = {
        **os.environ,
        "REDIS_URL": redis_url,
        "TASKS_API_MAX_WAITERS": str(MAX_WAITERS),
        "DATABASE_URL": f"sqlite:///{tmp_path_factory.mktemp('longpoll') / 'db.sqlite3'}",
        "LOG_LEVEL": "WARNING",
    }
    manage = [sys.executable, str(ROOT / "manage.py")]
    subprocess.run([*manage, "migrate", "-v", "0"], env=env, cwd=ROOT, check=True)
    out = subprocess.run(
        [*manage, "tasks", "token", "create", "--name", "pollers", "--queues", "*", "--json"],
        env=env,
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    port = free_port()
    proc = subprocess.Popen(
        # A listen backlog for 200 clients connecting at once (daphne's default, 50, resets some on a busy machine)
        [
            sys.executable,
            "-m",
            "daphne",
            "-e",
            f"tcp:{port}:interface=127.0.0.1:backlog=1024",
            "taskq.console.asgi:application",
        ],
        env=env,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    client = Http(port, json.loads(out)["token"])
    try:
        for _ in range(300):  # readiness, not a timing assertion
            if proc.poll() is not None:
                pytest.fail("daphne exited at start")
            try:
                if client.call("GET", "/api/v1/openapi.json")[0] == 200:
                    break
            except OSError:
                time.sleep(0.1)
        yield client
    finally:
        proc.terminate()
        proc.wait(timeout=20)
        redis.Redis.from_url(redis_url).flushdb()


def publish(api: Http, queue: str, n: int) -> set[str]:
    ids = set()
    for i in range(n):
        status, _, doc = api.call("POST", f"/api/v1/queues/{queue}/tasks", {"type": "job", "payload": {"n": i}})
        assert status == 201, doc
        ids.add(doc["id"])
    return ids


def assert_names_the_limit(status: int, headers: dict[str, str], doc: Any) -> None:
    """The documented refusal: 429 ``too_many_waiters``, naming the setting and its value, with Retry-After."""
    assert status == 429, doc
    assert doc["error"] == "too_many_waiters"
    assert "TASKS_API_MAX_WAITERS" in doc["message"] and f"({MAX_WAITERS})" in doc["message"]
    assert "Redis" not in doc["message"]
    assert int(headers["Retry-After"]) >= 1


class Race:
    """CONSUMERS threads, each long-polling (``timeout`` 2) and acking what it gets until a poll comes back empty
    once every task is published; a 429 is noted and answered as a client should, by polling again after its
    Retry-After."""

    def __init__(self, api: Http, queue: str) -> None:
        self.api, self.queue = api, queue
        self.published = threading.Event()
        self.lock = threading.Lock()
        self.delivered: Counter[str] = Counter()
        self.acked: Counter[str] = Counter()
        self.statuses: Counter[int] = Counter()
        self.refusals: list[tuple[int, dict[str, str], Any]] = []
        self.crashes: list[str] = []  # a consumer that met a broken connection

    def consumer(self) -> None:
        while True:
            status, headers, doc = self.api.call("POST", "/api/v1/consume", {"queues": [self.queue], "timeout": 2})
            with self.lock:
                self.statuses[status] += 1
            if status == 429:
                with self.lock:
                    self.refusals.append((status, headers, doc))
                time.sleep(int(headers.get("Retry-After", "1")))
                continue
            if status != 200 or (not doc["tasks"] and self.published.is_set()):
                return
            for task in doc["tasks"]:
                path = f"/api/v1/queues/{self.queue}/tasks/{task['id']}/ack"
                acked, _, body = self.api.call("POST", path, {"lease": task["lease"]})
                with self.lock:
                    self.delivered[task["id"]] += 1
                    if acked == 204:
                        self.acked[task["id"]] += 1
                    else:
                        self.statuses[acked] += 1

    def run(self) -> None:
        with ThreadPoolExecutor(CONSUMERS) as pool:
            futures = [pool.submit(self.consumer) for _ in range(CONSUMERS)]
        self.crashes = [repr(f.exception()) for f in futures if f.exception() is not None]


def test_two_hundred_long_polling_consumers_race_for_tasks(api):
    """Several rounds of 200 consumers long-polling with ``timeout`` 2 for tasks published before and during the
    round: no consume answers a 5xx, every task is delivered and acked exactly once, none is left, and each
    consume refused for being over the limit gets the documented 429."""
    for round_no in range(ROUNDS):
        queue = f"race{round_no}"
        published = publish(api, queue, TASKS_PER_ROUND // 2)
        race = Race(api, queue)
        racing = threading.Thread(target=race.run)
        racing.start()
        published |= publish(api, queue, TASKS_PER_ROUND - len(published))  # while they poll
        race.published.set()
        racing.join()
        assert race.crashes == []
        assert {s for s in race.statuses if s >= 500} == set(), race.statuses
        assert set(race.statuses) <= {200, 429}, race.statuses
        assert set(race.delivered) == published and set(race.delivered.values()) == {1}
        assert set(race.acked) == published and set(race.acked.values()) == {1}
        for refusal in race.refusals:
            assert_names_the_limit(*refusal)
        status, _, size = api.call("GET", f"/api/v1/queues/{queue}/size")
        assert status == 200 and size["size"] == 0, size


def test_a_consume_over_the_limit_gets_429_and_the_waiters_still_get_their_tasks(api):
    """MAX_WAITERS + 16 consumers long-poll an empty queue with the longest timeout: the waiters beyond the limit are
    refused at once with the 429 that names it; those waiting then each get one of the tasks published, and a
    freed slot admits a new long poll."""
    queue = "limit"
    extra = 16
    body = {"queues": [queue], "timeout": 60, "count": 1}  # the longest: the waiters outlast a slow machine
    with ThreadPoolExecutor(MAX_WAITERS + extra) as pool:
        futures = [pool.submit(api.call, "POST", "/api/v1/consume", body) for _ in range(MAX_WAITERS + extra)]
        refused = []
        for future in as_completed(futures):  # the refusals come back first: the others wait for tasks
            status, headers, doc = future.result()
            if status != 200:
                refused.append((status, headers, doc))
            if len(refused) == extra:
                break
        assert len(refused) == extra, refused
        for refusal in refused:
            assert_names_the_limit(*refusal)
        published = publish(api, queue, MAX_WAITERS)
        answers = [future.result() for future in futures]
    got = [doc["tasks"] for status, _, doc in answers if status == 200]
    assert len(got) == MAX_WAITERS and all(len(tasks) == 1 for tasks in got)
    assert {tasks[0]["id"] for tasks in got} == published
    status, _, doc = api.call("POST", "/api/v1/consume", {"queues": [queue], "timeout": 0.5})
    assert (status, doc["tasks"]) == (200, [])
