"""One translation of redis-py's exceptions (``broker.redis_errors``): no module of the product outside the broker
package (which reads error replies to decide what to send next, and hands them to the translation) catches them by
itself, and each kind becomes the engine's named error. ``Inspector.redis_info`` returns what it
can where the server refuses INFO, and the console's Redis page, the CLI and /metrics keep working there."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest
import redis

from taskq.queues.engine import Inspector, RedisUnavailableError, TaskNotFoundError
from taskq.queues.engine.broker.redis_errors import call, connecting, translated
from taskq.queues.engine.errors import RedisCommandError
from taskq.queues.engine.inspector import INFO_REFUSED
from tests.ports import free_port
from tests.redis_servers import redis_without_info

ROOT = Path(__file__).resolve().parents[2]
PRODUCT = ("taskq", "queues", "worker", "console", "metrics", "demo")
BROKER = ROOT / "queues" / "engine" / "broker"


def _redis_aliases(tree: ast.Module) -> tuple[set[str], set[str]]:
    """(names bound to the redis package or its submodules, names bound to classes imported from them)."""
    modules, classes = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "redis" or alias.name.startswith("redis."):
                    modules.add((alias.asname or alias.name).split(".")[0])
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "redis":
            for alias in node.names:
                classes.add(alias.asname or alias.name)
    return modules, classes


def _names_redis_error(expr: ast.expr | None, modules: set[str], classes: set[str]) -> bool:
    if expr is None:
        return False
    if isinstance(expr, ast.Tuple):
        return any(_names_redis_error(e, modules, classes) for e in expr.elts)
    if isinstance(expr, ast.BinOp):  # A | B
        return _names_redis_error(expr.left, modules, classes) or _names_redis_error(expr.right, modules, classes)
    if isinstance(expr, ast.Name):
        return expr.id in classes
    if isinstance(expr, ast.Attribute):
        root = expr
        while isinstance(root, ast.Attribute):
            root = root.value
        is_exception = expr.attr.endswith(("Error", "Exception")) or expr.attr in {"NoScriptError"}
        return isinstance(root, ast.Name) and root.id in modules and is_exception
    return False


def redis_error_handlers(path: Path) -> list[int]:
    """Lines of ``path`` that catch, or test ``isinstance`` against, one of redis-py's exception classes."""
    tree = ast.parse(path.read_text(), str(path))
    modules, classes = _redis_aliases(tree)
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ExceptHandler) and _names_redis_error(node.type, modules, classes):
            lines.append(node.lineno)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "isinstance"
            and len(node.args) == 2
            and _names_redis_error(node.args[1], modules, classes)
        ):
            lines.append(node.lineno)
    return lines


def test_no_module_but_the_translation_catches_redis_py_exceptions():
    files = [ROOT / "manage.py", *(p for root in PRODUCT for p in sorted((ROOT / root).rglob("*.py")))]
    found = [
        f"{path.relative_to(ROOT)}:{line}"
        for path in files
        if BROKER not in path.parents
        for line in redis_error_handlers(path)
    ]
    assert not found, f"redis-py exceptions handled outside the broker package: {found}"


def test_the_scan_finds_each_way_of_naming_them(tmp_path):
    # Guards the test above: each spelling it must catch, and the one place that may.
    sample = tmp_path / "sample.py"
    sample.write_text(
        "import redis\nimport redis.exceptions as rx\nfrom redis.exceptions import ResponseError as RE\n"
        "try:\n    pass\nexcept redis.ConnectionError:\n    pass\n"
        "try:\n    pass\nexcept (ValueError, rx.TimeoutError):\n    pass\n"
        "try:\n    pass\nexcept RE:\n    pass\n"
        "ok = isinstance(ValueError(), redis.RedisError | KeyError)\n"
        "cluster = isinstance(object(), redis.cluster.RedisCluster)\n"
    )
    assert redis_error_handlers(sample) == [6, 10, 14, 16]
    assert redis_error_handlers(BROKER / "redis_errors.py"), "the translation module itself names them"


def test_unreachable_and_bad_urls_become_redis_unavailable():
    port = free_port()
    dead = redis.Redis(port=port, socket_connect_timeout=0.5)
    with pytest.raises(RedisUnavailableError) as caught:
        call("probe.ping", dead.ping)
    assert caught.value.op == "probe.ping" and "unreachable" in caught.value.message
    assert isinstance(caught.value.__cause__, redis.ConnectionError)  # kept for the log
    with pytest.raises(RedisUnavailableError) as bad, connecting("redis://:s3cret@127.0.0.1:notaport/0"):
        redis.Redis.from_url("redis://:s3cret@127.0.0.1:notaport/0")
    assert "s3cret" not in bad.value.message


def test_error_replies_become_command_errors_or_the_scripts_named_errors(redis_client):
    redis_client.set("a-string", "x")
    with pytest.raises(RedisCommandError) as caught:
        call("probe.lpush", redis_client.lpush, "a-string", "y")
    assert "WRONGTYPE" in caught.value.message and caught.value.code == "redis_error"
    with pytest.raises(TaskNotFoundError) as named, translated("probe.script", script="probe"):
        redis_client.eval("return redis.error_reply('NOT_FOUND task t1')", 0)
    assert named.value.message == "task t1" and named.value.op == "probe.script"
    assert redis_client.get("a-string") == b"x"  # a refused command changes nothing


@pytest.fixture(scope="module")
def info_refused_url(tmp_path_factory):
    """A real redis-server whose configuration disables INFO, as managed Redis services often do."""
    with redis_without_info(tmp_path_factory.mktemp("noinfo")) as url:
        yield url


def test_redis_info_returns_what_it_can_when_info_is_refused(info_refused_url):
    conn = redis.Redis.from_url(info_refused_url)
    with pytest.raises(redis.ResponseError):
        conn.info()  # the server really refuses it
    conn.set("k", "v")
    info = Inspector(info_refused_url).redis_info()
    assert "unknown command" in info[INFO_REFUSED].lower() and info["dbsize"] == 1
    assert INFO_REFUSED not in Inspector("redis://127.0.0.1:6379/9").redis_info()


def test_the_redis_page_and_the_cli_say_info_is_refused_instead_of_failing(info_refused_url, admin_client, settings):
    settings.REDIS_URL = info_refused_url  # the console's inspectors are per URL: this one is new
    response = admin_client.get("/redis/")
    assert response.status_code == 200
    assert b"data-info-refused" in response.content and b"refuses <code>INFO</code>" in response.content
    stats = subprocess.run(
        [sys.executable, "manage.py", "tasks", "stats", "--json"],
        cwd=ROOT,
        env={**os.environ, "REDIS_URL": info_refused_url},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert stats.returncode == 0, stats.stderr
    assert '"redis": null' in stats.stdout


def test_every_public_inspector_method_says_what_it_raises():
    from taskq.queues.engine.inspector import Inspector as Insp

    silent = [
        name
        for name, member in vars(Insp).items()
        if callable(member) and not name.startswith("_") and "Raises:" not in (member.__doc__ or "")
    ]
    assert not silent, f"Inspector methods whose docstring does not say what they raise: {silent}"


@pytest.mark.parametrize(
    "reply",
    ["CLUSTERDOWN The cluster is down", "MASTERDOWN Link with MASTER is down", "MOVED 3999 127.0.0.1:7002",
     "ASK 3999 127.0.0.1:7002", "TRYAGAIN Multiple keys request during rehashing of slot"],
)  # fmt: skip
def test_a_cluster_in_a_failover_is_unavailable_not_a_failed_command(redis_client, reply):
    """What a Redis Cluster answers while a slot has no master or moves: retried with backoff like a lost
    connection, even from a transition script, never reported as the script's failure."""
    with pytest.raises(RedisUnavailableError), translated("probe.script", script="probe"):
        redis_client.eval(f"return redis.error_reply('{reply}')", 0)
