"""One road to Redis: no product module outside the broker package (``queues/engine/broker/``) sends a command to
Redis. The test walks every product module (``queues/``, ``worker/``, ``console/``, ``metrics/``, ``taskq/``; not
tests, benchmarks, the demo, scripts or migrations) and fails naming ``file:line`` for what only the broker may do:

* import redis-py (``import redis``, ``from redis... import``);
* hold or hand on a redis-py client: any attribute named ``conn`` (``self.conn``, ``broker.conn.get``,
  ``f(broker.conn)``), ``connection_pool``;
* send a command by hand: ``execute_command``, ``.pipeline(``, ``.pubsub(``, ``run_command(``;
* translate redis-py's errors itself: ``translated(``, ``redis_errors.call(`` (or ``call`` imported from there).

``console/rq/`` is exempt: it drives RQ's own Redis through RQ's library (django-rq's connections).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PRODUCT = ("queues", "worker", "console", "metrics", "taskq")
#: Folders never walked: not product code, or not ours to hold to this rule.
SKIPPED_DIRS = {"migrations", "__pycache__", "tests"}
#: Where talking to Redis is the job (the broker package), or another Redis is driven by its own library (RQ).
EXEMPT = ("queues/engine/broker/", "console/rq/")

#: TEMPORARY: modules that still reach Redis themselves, each with whoever is moving it onto the broker. The list
#: only shrinks: a module that no longer breaks the rule (or no longer exists) must leave it (a test says so).
NOT_YET_MOVED: dict[str, str] = {}


def product_modules() -> Iterator[str]:
    """Every product .py file, as a path relative to the repository (symlinked folders are not followed: ``taskq/``
    links to the real folders, which are walked under their own names)."""
    for top in PRODUCT:
        for path in sorted((ROOT / top).rglob("*.py")):
            relative = path.relative_to(ROOT)
            if any(part in SKIPPED_DIRS for part in relative.parts) or _is_symlinked(relative):
                continue
            yield relative.as_posix()


def _is_symlinked(relative: Path) -> bool:
    return any((ROOT / parent).is_symlink() for parent in relative.parents if parent != Path("."))


class Finder(ast.NodeVisitor):
    """Collects ``(line, what)`` for every way of reaching Redis other than through the broker."""

    def __init__(self) -> None:
        self.found: list[tuple[int, str]] = []

    def _add(self, node: ast.AST, what: str) -> None:
        self.found.append((getattr(node, "lineno", 0), what))

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if alias.name == "redis" or alias.name.startswith("redis."):
                self._add(node, f"import {alias.name}")

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = node.module or ""
        if node.level == 0 and (module == "redis" or module.startswith("redis.")):
            self._add(node, f"from {module} import")
        if module.split(".")[-1] == "redis_errors" and any(a.name in ("call", "translated") for a in node.names):
            self._add(node, "imports redis_errors' call/translated")
        self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if node.attr == "conn":
            self._add(node, "a .conn attribute (a redis-py client held or handed on)")
        elif node.attr in ("connection_pool", "execute_command"):
            self._add(node, f".{node.attr}")
        self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        if node.id == "execute_command":
            self._add(node, "execute_command")

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Attribute):
            if func.attr in ("pipeline", "pubsub"):
                self._add(node, f".{func.attr}(")
            elif func.attr == "call" and isinstance(func.value, ast.Name) and func.value.id == "redis_errors":
                self._add(node, "redis_errors.call(")
            elif func.attr in ("translated", "run_command", "run_command_async"):
                self._add(node, f"{func.attr}(")
        elif isinstance(func, ast.Name) and func.id in ("translated", "run_command", "run_command_async"):
            self._add(node, f"{func.id}(")
        self.generic_visit(node)


def findings(source: str) -> list[tuple[int, str]]:
    finder = Finder()
    finder.visit(ast.parse(source))
    return sorted(finder.found)


def offenders() -> dict[str, list[str]]:
    """Every product module outside EXEMPT that breaks the rule -> its findings as ``file:line: what``."""
    out: dict[str, list[str]] = {}
    for module in product_modules():
        if module.startswith(EXEMPT):
            continue
        found = findings((ROOT / module).read_text(encoding="utf-8"))
        if found:
            out[module] = [f"{module}:{line}: {what}" for line, what in found]
    return out


def test_no_module_outside_the_broker_talks_to_redis():
    unlisted = [line for module, lines in offenders().items() if module not in NOT_YET_MOVED for line in lines]
    assert not unlisted, "reach Redis through the broker (send, execute, drive, subscription):\n" + "\n".join(unlisted)


def test_the_list_of_modules_not_yet_moved_only_shrinks():
    done = sorted(set(NOT_YET_MOVED) - set(offenders()))
    assert not done, f"these modules keep the rule now (or are gone): remove them from NOT_YET_MOVED: {done}"


def test_the_walk_sees_the_product_and_only_it():
    modules = set(product_modules())
    assert {"queues/engine/events.py", "worker/server.py", "console/rq/bridge.py", "metrics/__init__.py"} <= modules
    assert not any(m.startswith(("tests/", "bench/", "demo/", "scripts/")) or "/migrations/" in m for m in modules)
    assert not any(m.startswith("taskq/queues/") for m in modules)  # the symlink to queues/ is not walked twice


@pytest.mark.parametrize(
    ("source", "what"),
    [
        ("import redis", "import redis"),
        ("import redis.asyncio", "import redis.asyncio"),
        ("from redis.crc import key_slot", "from redis.crc import"),
        ("from .redis_errors import call", "imports redis_errors' call/translated"),
        ("self.broker.conn.get(key)", "a .conn attribute (a redis-py client held or handed on)"),
        ("database_of(inspector.conn)", "a .conn attribute (a redis-py client held or handed on)"),
        ("self.conn = connect(url)", "a .conn attribute (a redis-py client held or handed on)"),
        ("client.connection_pool.connection_kwargs", ".connection_pool"),
        ("client.execute_command('PING')", ".execute_command"),
        ("send = execute_command", "execute_command"),
        ("pipe = client.pipeline(transaction=False)", ".pipeline("),
        ("sub = client.pubsub()", ".pubsub("),
        ("with translated('op'):\n    pass", "translated("),
        ("redis_errors.call('op', fn)", "redis_errors.call("),
        ("run_command(client, request)", "run_command("),
    ],
)
def test_the_rule_catches(source: str, what: str):
    assert (1, what) in findings(source)


@pytest.mark.parametrize(
    "source",
    [
        "self.broker.send('op', 'get', key)",
        "self.broker.execute('op', Batch(commands))",
        "pubsub = self.broker.subscription('op')",
        "options['conn'] = connect(url)",  # handing the broker the connection it is to own
        "connection = make()",
        "self.pipe.send(message)",
    ],
)
def test_the_rule_lets_the_broker_calls_pass(source: str):
    assert findings(source) == []
