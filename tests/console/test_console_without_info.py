"""On a real redis-server that refuses INFO (``--rename-command INFO ""``, as hardened Redis does) every console
page, /metrics and the CLI answer without a 5xx; the Redis page names the fields it cannot show and why."""

from __future__ import annotations

import io
import json
import time

import pytest
import redis

from taskq.console.rq import bridge_enabled
from taskq.queues import handles
from taskq.queues.cli import main
from taskq.queues.engine import Client
from taskq.queues.engine.broker import Broker
from taskq.queues.engine.worker_store import WorkerStore
from tests.redis_servers import redis_without_info, started_redis

pytestmark = pytest.mark.django_db

SERVER = "host-1:7:abc"


@pytest.fixture(scope="module")
def no_info_url(tmp_path_factory):
    with redis_without_info(tmp_path_factory.mktemp("noinfo")) as url:
        conn = redis.Redis.from_url(url)
        with pytest.raises(redis.ResponseError):
            conn.info()  # the server really refuses it
        conn.close()
        yield url


@pytest.fixture
def console_on_it(settings, no_info_url):
    """The console, its CLI and the RQ pages on the INFO-less Redis, with a task in a few states and a server."""
    redis.Redis.from_url(no_info_url).flushdb()
    settings.REDIS_URL = no_info_url
    settings.RQ_QUEUES = {"default": {"URL": no_info_url}}
    handles.reset()
    client, broker = Client(no_info_url), Broker(no_info_url)
    pending = client.enqueue("email:deliver", {"to": "ada@example.com"}, queue="mail").id
    client.enqueue("email:deliver", {"to": "bob@example.com"}, queue="mail")
    [leased] = broker.run(broker.transitions.dequeue("mail", 1, 30, SERVER, "t:"))
    broker.run(broker.transitions.retry("mail", leased.id, leased.token, 0, "boom", worker=SERVER))
    now_ms = int(time.time() * 1000)
    info = {"id": SERVER, "host": "host-1", "pid": 7, "status": "active", "queues": {"mail": 1}, "heartbeat": now_ms}
    WorkerStore(broker).write_server(info, {}, ttl=60)
    yield {"queue": "mail", "task": pending, "retry": leased.id}
    client.close()
    broker.close()
    handles.reset()


def pages(seeded: dict[str, str]) -> list[str]:
    queue, task = seeded["queue"], seeded["task"]
    return [
        "/",
        "/?days=7",
        "/servers/",
        f"/servers/{SERVER}/",
        "/history/",
        "/schedulers/",
        "/redis/",
        "/settings/",
        "/search/?q=type:email:*",
        *(f"/queues/{queue}/?state={state}" for state in ("pending", "active", "retry", "archived", "completed")),
        f"/queues/{queue}/?type=email",
        f"/queues/{queue}/tasks/{task}/",
        f"/queues/{queue}/tasks/{seeded['retry']}/edit/",
        f"/queues/{queue}/types/email:deliver/",
        *(["/rq/", "/rq/default/"] if bridge_enabled() else []),  # the RQ pages, where the rq extra is installed
        "/admin/",
        f"/admin/taskq/tasks/?queue={queue}&state=pending",
        "/admin/taskq/auditlog/",
    ]


def test_every_page_answers_without_a_5xx(admin_client, console_on_it):
    for url in pages(console_on_it):
        response = admin_client.get(url)
        assert response.status_code == 200, (url, response.status_code)


def test_the_redis_page_names_the_unavailable_fields_and_why(admin_client, console_on_it):
    page = admin_client.get("/redis/").content.decode()
    assert "data-info-refused" in page and "unknown command" in page.lower()
    assert "these fields are unavailable: <span data-unavailable>Version, Mode, Uptime," in page
    assert "Max memory</dt><dd>unavailable</dd>" in page


def test_metrics_answers_without_the_redis_memory_series(client, console_on_it):
    response = client.get("/metrics")
    assert response.status_code == 200
    body = response.content.decode()
    assert 'taskq_tasks{queue="mail",state="retry"} 1.0' in body
    assert "taskq_redis_memory_used_bytes" not in body


@pytest.mark.parametrize(
    "argv",
    [
        ["stats"],
        ["stats", "--json"],
        ["queue", "ls"],
        ["queue", "inspect", "mail"],
        ["queue", "history", "mail"],
        ["task", "ls", "--queue", "mail", "--state", "retry"],
        ["server", "ls"],
        ["cron", "ls"],
        ["group", "ls", "--queue", "mail"],
        ["workflow", "ls", "--queue", "mail"],
        ["export", "status"],
        ["health", "--max-age", "60"],
    ],
)
def test_the_cli_answers(console_on_it, argv):
    stdout, stderr = io.StringIO(), io.StringIO()
    assert main(argv, stdout=stdout, stderr=stderr) == 0, stderr.getvalue()
    if argv == ["stats", "--json"]:
        doc = json.loads(stdout.getvalue())
        assert doc["redis"] is None and "unknown command" in doc["redis_unavailable"].lower()
    if argv == ["stats"]:
        assert "INFO is not available on this server (renamed or disabled): " in stdout.getvalue()


@pytest.mark.parametrize("maxmemory, shown", [("0", "no limit"), ("100mb", "100.00M")])
def test_the_redis_page_reads_a_max_memory_of_0_as_no_limit(admin_client, settings, tmp_path, maxmemory, shown):
    with started_redis(tmp_path, "--maxmemory", maxmemory) as url:
        settings.REDIS_URL = url
        handles.reset()
        page = admin_client.get("/redis/").content.decode()
        handles.reset()
    assert f"<dt>Max memory</dt><dd>{shown}</dd>" in page
    assert "data-unavailable" not in page
