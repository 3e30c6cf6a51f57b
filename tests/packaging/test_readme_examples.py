"""Every documented example that produces tasks (``Client()``, ``AsyncClient``, a ``client``) runs as written in
``python manage.py shell`` with ``REDIS_URL`` naming the test database, and the console's inspector finds what it
wrote there: its tasks in the queues it named, its workflows, its groups.

Issue 24: the README's workflow and group examples used a bare ``Client()`` (which then ignored ``REDIS_URL`` and
wrote to database 0) or a ``client`` they never defined, and the console, reading the database ``REDIS_URL``
named, answered "No workflow".

Each example runs in a shell of its own, on a flushed database. Examples that wait for a task or a workflow get a
worker (``manage.py taskworker``) with the handlers of ``readme_handlers``, as a reader has one running."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import redis

from taskq.queues import conf
from taskq.queues.engine import Inspector
from tests.worker.worker_support import kill_process, start_taskworker

ROOT = Path(__file__).resolve().parents[2]
#: The Markdown files whose examples run here: the README and every page of the docs site.
EXAMPLE_SOURCES: tuple[Path, ...] = (ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")))
#: A Python block that produces: it makes a client, or uses one.
PRODUCES = re.compile(r"\b(?:Async)?Client\(|\bclient\.")
#: What the waiting examples need a worker for: their queues, and the handlers of their task types.
WORKER_QUEUES = "critical=1,default=1"
WORKER_HANDLERS = "tests.packaging.readme_handlers"


@dataclass(frozen=True)
class Example:
    source: Path
    line: int  # of the opening fence
    heading: str
    code: str

    @property
    def name(self) -> str:
        return f"{self.source.name}:{self.line} ({self.heading})"


def producing_examples() -> list[Example]:
    """The ```python blocks of ``EXAMPLE_SOURCES`` that produce, with the heading each sits under."""
    found = []
    for source in EXAMPLE_SOURCES:
        heading, block, start = "", None, 0
        for number, line in enumerate(source.read_text().splitlines(), 1):
            if block is None and line.startswith("#"):
                heading = line.lstrip("#").strip()
            elif block is None and line.strip() == "```python":
                block, start = [], number
            elif block is not None and line.strip() == "```":
                code = "\n".join(block) + "\n"
                if PRODUCES.search(code):
                    found.append(Example(source, start, heading, code))
                block = None
            elif block is not None:
                block.append(line)
    return found


@dataclass
class Writes:
    """What an example's client calls write, read from its code: the queues of its tasks, of its workflows and
    of its groups."""

    task_queues: set[str]
    workflow_queues: set[str]
    group_queues: set[str]
    waits: bool


def redis_urls_in(code: str) -> list[str]:
    """The Redis URLs an example's code names (comments aside): an example that names one writes there, not where
    ``REDIS_URL`` says, and running it here would write to someone else's database."""
    return [
        node.value
        for node in ast.walk(ast.parse(code))
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and "redis" in node.value.split("://")[0]
    ]


def writes_of(code: str) -> Writes:
    writes = Writes(set(), set(), set(), False)
    for node in ast.walk(ast.parse(code)):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        keywords = {k.arg: k.value for k in node.keywords}
        queue_node = keywords.get("queue")
        queue = queue_node.value if isinstance(queue_node, ast.Constant) else "default"
        method = node.func.attr
        if method in ("wait", "wait_workflow"):
            writes.waits = True
        elif method == "submit":
            writes.workflow_queues.add(queue)
        elif method == "enqueue" and "group" in keywords:
            writes.group_queues.add(queue)
        elif method in ("enqueue", "enqueue_many"):
            writes.task_queues.add(queue)
    return writes


EXAMPLES = producing_examples()


def test_the_examples_are_found():
    """The extraction itself: the README's producing sections are all there (a block that stops matching, or a
    source that moved, must not silently leave nothing to run)."""
    headings = {example.heading for example in EXAMPLES}
    assert {"Producing tasks", "Group aggregation", "Workflows and dependencies"} <= headings, headings


@pytest.fixture(scope="module")
def database_url(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A migrated SQLite database of the examples' own (the admin's policies are models)."""
    url = f"sqlite:///{tmp_path_factory.mktemp('readme') / 'db.sqlite3'}"
    done = manage_py({**os.environ, "DATABASE_URL": url}, "migrate", "--noinput")
    assert done.returncode == 0, done.stderr
    return url


def manage_py(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """``python manage.py <args>`` in a process of its own, its output kept for the assertion's message."""
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=100
    )


@pytest.fixture
def console(settings_redis, redis_client: redis.Redis) -> Iterator[Inspector]:
    """The console's inspector (``taskq.queues.conf``), on the flushed test database that ``REDIS_URL`` names."""
    yield conf.get_inspector()


@pytest.fixture
def worker(redis_url: str, tmp_path: Path, database_url: str) -> Iterator[None]:
    processes: list[subprocess.Popen] = []
    log = tmp_path / "worker.log"
    start_taskworker(
        processes, redis_url, log, "--queues", WORKER_QUEUES, "--import", WORKER_HANDLERS, DATABASE_URL=database_url
    )
    try:
        yield
    finally:
        for process in processes:
            kill_process(process)


@pytest.mark.slow
@pytest.mark.parametrize("example", EXAMPLES, ids=[example.name for example in EXAMPLES])
def test_the_example_runs_in_manage_py_shell(
    example: Example, request: pytest.FixtureRequest, console: Inspector, redis_url: str, database_url: str
):
    assert not redis_urls_in(example.code), f"{example.name} names a Redis: a reader's Client() needs none"
    writes = writes_of(example.code)
    if writes.waits:
        request.getfixturevalue("worker")
    # The shell a reader opens: REDIS_URL names the database; nothing else says where to write. Without the
    # shell's automatic imports (Django 5.2+): an example imports what it uses, so it runs on any Django.
    env = {k: v for k, v in os.environ.items() if k not in ("TASKS_KEY_PREFIX",)}
    env.update(REDIS_URL=redis_url, DATABASE_URL=database_url, DJANGO_SETTINGS_MODULE="taskq.console.settings")
    done = manage_py(env, "shell", "--no-imports", "-c", example.code)
    assert done.returncode == 0, f"{example.name} failed in manage.py shell:\n{done.stderr}"

    assert writes.task_queues | writes.workflow_queues | writes.group_queues, "the example writes nothing?"
    for queue in writes.task_queues:
        info = console.queue_info(queue)
        assert info.size + info.completed + info.processed_total > 0, f"no task of {example.name} in {queue!r}"
    for queue in writes.workflow_queues:
        for workflow_id, _created in console.workflows(queue) or pytest.fail(f"no workflow in {queue!r}"):
            assert console.workflow(queue, workflow_id).id == workflow_id
    for queue in writes.group_queues:
        assert console.groups(queue), f"no group of {example.name} in {queue!r}"
