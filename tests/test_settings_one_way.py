"""Settings are read one way (issue 24): the product (``queues/``, ``worker/``, ``console/``, ``metrics/``) reads
every taskq setting through the typed object (``taskq.queues.engine.settings.TaskqSettings``; in Django,
``taskq.queues.conf.taskq_settings()``), and no default of one is written down anywhere but there.

The scans read the source, so a new ``conf.setting("TASKS_…")``, ``getattr(settings, "TASKS_…")``,
``settings.TASKS_…``, ``os.environ.get("TASKS_…")`` or a copied default (``DEFAULT_TTR = 30.0``) fails here with
its file and line, whoever adds it.
"""

from __future__ import annotations

import ast
import dataclasses
import operator
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from taskq.queues.engine.settings import DEFAULTS, TaskqSettings
from taskq.worker.config import WorkerConfig

ROOT = Path(__file__).resolve().parents[1]
PRODUCT = ("taskq", "queues", "worker", "console", "metrics")
#: Where settings may be read by name: the object's declaration, the Django glue that fills it from Django's
#: settings (and caches it), and the Django project's settings file that fills it from the environment.
SETTINGS_MODULES = frozenset({"queues/engine/settings.py", "queues/conf.py", "console/settings.py"})
#: Every name of a taskq setting: the object's fields, and TASKS_REDACT, the Django-only form of the two
#: redaction lists in one dict.
NAMES = frozenset(f.metadata["name"] for f in dataclasses.fields(TaskqSettings)) | {"TASKS_REDACT"}
#: Objects whose ``.get(NAME)``/``[NAME]`` reads the environment.
ENVIRON = frozenset({"environ", "os.environ"})


def product_files() -> Iterator[tuple[str, ast.Module]]:
    for package in PRODUCT:
        for path in sorted((ROOT / package).rglob("*.py")):
            relative = path.relative_to(ROOT).as_posix()
            if relative not in SETTINGS_MODULES:
                yield relative, ast.parse(path.read_text(), filename=relative)


def dotted(node: ast.AST) -> str:
    """``os.environ`` for the expression ``os.environ``; "" for anything but names and attributes."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = dotted(node.value)
        return f"{inner}.{node.attr}" if inner else ""
    return ""


def string(node: ast.AST | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def read_by_name(node: ast.AST) -> str | None:
    """What ``node`` is, when it reads a taskq setting by its name (or Django's settings by a computed name)."""
    if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load) and node.attr in NAMES:
        return f"{dotted(node) or node.attr}"
    if isinstance(node, ast.Subscript) and dotted(node.value) in ENVIRON and string(node.slice) in NAMES:
        return f'{dotted(node.value)}["{string(node.slice)}"]'
    if not isinstance(node, ast.Call) or not node.args:
        return None
    callee, first = dotted(node.func), string(node.args[0])
    name = callee.rpartition(".")[2]
    if name in ("setting", "_setting", "getenv") and first in NAMES:
        return f'{callee}("{first}")'
    if callee.rpartition(".")[0] in ENVIRON and name == "get" and first in NAMES:
        return f'{callee}("{first}")'
    if callee in ("getattr", "hasattr") and len(node.args) >= 2:
        what = string(node.args[1])
        if what in NAMES:
            return f'{callee}({dotted(node.args[0])}, "{what}")'
        if what is None and dotted(node.args[0]) in ("settings", "django_settings"):
            return f"{callee}({dotted(node.args[0])}, <a computed name>)"
    return None


def test_no_setting_is_read_by_its_name_outside_the_settings_modules():
    found = [
        f"{path}:{node.lineno}: {what}"
        for path, tree in product_files()
        for node in ast.walk(tree)
        if (what := read_by_name(node))
    ]
    assert not found, (
        "read these through the typed settings object (taskq.queues.conf.taskq_settings()):\n" + "\n".join(found)
    )


# -- defaults written twice ------------------------------------------------------------------------------------

_ARITHMETIC = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv}
_NOT_A_VALUE = object()


def literal(node: ast.AST | None) -> Any:
    """The value of a literal (``30.0``, ``"tq"``, ``90 * 24 * 3600.0``), or _NOT_A_VALUE for anything else."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        value = literal(node.operand)
        return -value if isinstance(value, int | float) else _NOT_A_VALUE
    if isinstance(node, ast.BinOp) and type(node.op) in _ARITHMETIC:
        left, right = literal(node.left), literal(node.right)
        if isinstance(left, int | float) and isinstance(right, int | float):
            return _ARITHMETIC[type(node.op)](left, right)
    return _NOT_A_VALUE


def _words(name: str) -> frozenset[str]:
    """A name's words, without the unit: ``scheduler_grace_seconds``, ``--grace-seconds`` and ``SchedulerGrace``
    give {scheduler, grace}."""
    snake = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower().replace("-", "_")
    return frozenset(snake.split("_")) - {"seconds", "", "init"}


#: (setting field's words, its name, its default), for the defaults worth comparing: None, booleans and empty
#: values say nothing by themselves.
_DEFAULTS = [
    (_words(f.name), f.name, f.default)
    for f in dataclasses.fields(TaskqSettings)
    if f.default is not None and not isinstance(f.default, bool) and f.default not in ("", ())
]


def _same(a: Any, b: Any) -> bool:
    return not isinstance(a, bool) and not isinstance(b, bool) and type(a) in (type(b), int, float) and a == b


@dataclasses.dataclass(frozen=True)
class Default:
    name: str  # the constant, field, parameter or command-line option
    value: ast.AST
    line: int
    context: frozenset[str]  # the words of the module, classes and functions it is written in


def defaults_in(node: ast.AST, context: frozenset[str]) -> Iterator[Default]:
    """Every default written in the source under ``node``: module and class constants and fields, function
    parameters, and ``default=`` of a call that names an option first (``add_argument("--master", default=…)``)."""
    if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
        context = context | _words(node.name)
    for name, value, line in _written_at(node):
        yield Default(name, value, line, context)
    for child in ast.iter_child_nodes(node):
        yield from defaults_in(child, context)


def _written_at(node: ast.AST) -> Iterator[tuple[str, ast.AST, int]]:
    """The (name, value, line) of the defaults ``node`` itself writes."""
    if isinstance(node, ast.Assign):
        yield from ((t.id, node.value, node.lineno) for t in node.targets if isinstance(t, ast.Name))
    elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
        yield node.target.id, node.value, node.lineno
    elif isinstance(node, ast.arguments):
        positional = node.posonlyargs + node.args
        named = zip(positional[len(positional) - len(node.defaults) :], node.defaults, strict=True)
        keyword = ((arg, value) for arg, value in zip(node.kwonlyargs, node.kw_defaults, strict=True) if value)
        yield from ((arg.arg, value, value.lineno) for arg, value in (*named, *keyword))
    elif isinstance(node, ast.Call) and node.args and string(node.args[0]):
        default = next((k.value for k in node.keywords if k.arg == "default"), None)
        if default is not None:
            yield str(string(node.args[0])), default, node.lineno


def _spelled_out(field_words: frozenset[str], words: frozenset[str], context: frozenset[str]) -> bool:
    """Whether a default called ``words`` is named after the setting: all its words are the setting's, and what it
    leaves out is said by where it is (``grace`` in class ``Scheduler`` is ``scheduler_grace``; ``event_cap`` in
    ``EventExporter`` is ``event_export_cap``), so an ``interval`` of some other component is not the scheduler's."""
    if not words or not words <= field_words:
        return False
    return all(any(word.startswith(missing) for word in context) for missing in field_words - words)


def duplicated_defaults(path: str, tree: ast.Module) -> Iterator[str]:
    for default in defaults_in(tree, _words(Path(path).stem)):
        value = literal(default.value)
        if value is _NOT_A_VALUE or value is None or isinstance(value, bool):
            continue
        name, words = default.name, _words(default.name)
        constant = name.isupper() and (name.startswith("DEFAULT_") or name.endswith("_DEFAULT"))
        for field_words, field_name, field_default in _DEFAULTS:
            # A constant called DEFAULT_…, or a parameter, field or option named after the setting, holding its
            # default.
            if _same(value, field_default) and (constant or _spelled_out(field_words, words, default.context)):
                yield f"{path}:{default.line}: {name} = {value!r} repeats the default of TaskqSettings.{field_name}"


def test_no_default_of_a_setting_is_written_outside_the_settings_object():
    found = [line for path, tree in product_files() for line in duplicated_defaults(path, tree)]
    assert not found, "take these from taskq.queues.engine.settings.DEFAULTS (or the settings in force):\n" + "\n".join(
        found
    )


def test_the_scans_catch_what_they_are_for():
    """The two scans, on the kinds of line the issue found: each is caught, and its typed reading is not."""
    caught = (
        'conf.setting("TASKS_API_MAX_WAITERS")',
        'setting("TASKS_CONSOLE_READ_ONLY", None)',
        'getattr(settings, "TASKS_REDACT", None)',
        "settings.TASKS_LEASE_SECONDS",
        'os.environ.get("REDIS_URL", "x")',
        'os.environ["SPARK_MASTER"]',
        "{n: getattr(settings, n, None) for n in names}",
    )
    for source in caught:
        assert any(read_by_name(node) for node in ast.walk(ast.parse(source))), source
    for source in ("conf.taskq_settings().lease_seconds", "settings.DEBUG", 'getattr(settings, "SECRET_KEY", "")'):
        assert not any(read_by_name(node) for node in ast.walk(ast.parse(source))), source
    copies = (
        "DEFAULT_TTR = 30.0",
        "class Scheduler:\n    def __init__(self, *, interval: float = 1.0, grace: float = 60.0): ...",
        "def spark_parser():\n    parser.add_argument('--master', default='local[*]')",
        "class EventExporter:\n    event_cap: int = 1_000_000",
        "ARCHIVE_AGE_DEFAULT = 90 * 24 * 3600.0",
    )
    for source in copies:
        assert list(duplicated_defaults("x.py", ast.parse(source))), source
    kept = (
        "MAX_WAIT = 60.0",
        "def wait(timeout: float = 30.0): ...",
        "lease: float = DEFAULTS.lease_seconds",
        "class Watcher:\n    def __init__(self, interval: float = 1.0): ...",
    )
    for source in kept:
        assert not list(duplicated_defaults("x.py", ast.parse(source))), source
    assert DEFAULTS.scheduler_grace_seconds == 60.0 and DEFAULTS.lease_seconds == 30.0  # what the copies above copy


# -- configurations built from the settings in one call ---------------------------------------------------------


def test_a_worker_is_built_from_the_settings_in_one_call():
    taskq = dataclasses.replace(
        DEFAULTS,
        redis_url="redis://127.0.0.1:6379/3",
        key_prefix="tq2",
        lease_seconds=12.0,
        heartbeat_seconds=1.5,
        clock_skew_seconds=0.0,
        shutdown_timeout=3.0,
        janitor_seconds=4.0,
        group_max_size=5,
        event_stream_maxlen=500,
        event_export=True,
        event_export_dir="/srv/events",
        spark_master="spark://spark:7077",
        redact_keys=("card",),
    )
    config = WorkerConfig.from_settings(taskq)
    assert (config.redis_url, config.prefix, config.lease_seconds, config.shutdown_timeout) == (
        "redis://127.0.0.1:6379/3",
        "tq2",
        12.0,
        3.0,
    )
    assert (config.heartbeat_every, config.recoverer_every, config.skew, config.janitor_interval) == (1.5, 6.0, 0, 4.0)
    assert (config.group_settings.max_size, config.limits.event_maxlen) == (5, 500)
    assert (config.export_dir, config.spark.master) == ("/srv/events", "spark://spark:7077")
    assert config.redaction.hides("any", b'{"card": "4111"}')
    assert WorkerConfig.from_settings(dataclasses.replace(taskq, event_export=False)).export_dir is None


def test_options_win_over_the_settings_and_an_option_not_given_leaves_them():
    taskq = dataclasses.replace(DEFAULTS, shutdown_timeout=3.0, lease_seconds=12.0)
    config = WorkerConfig.from_settings(taskq, shutdown_timeout=0.5, concurrency=3, prefetch=None)
    assert (config.shutdown_timeout, config.concurrency, config.lease_seconds, config.prefetch) == (0.5, 3, 12.0, 15)
    assert WorkerConfig.from_settings(taskq, shutdown_timeout=None).shutdown_timeout == 3.0


def taskworker_config(*argv: str) -> WorkerConfig:
    from taskq.worker.management.commands.taskworker import Command

    return Command.config(vars(Command().create_parser("manage.py", "taskworker").parse_args(argv)))


def test_taskworker_takes_its_options_over_the_settings_over_the_defaults(settings):
    settings.TASKS_SHUTDOWN_TIMEOUT = 3.0
    settings.TASKS_LEASE_SECONDS = 12.0
    config = taskworker_config("--queues", "mail=2", "--concurrency", "4")
    assert (config.queues, config.concurrency, config.shutdown_timeout, config.lease_seconds) == (
        {"mail": 2},
        4,
        3.0,
        12,
    )
    assert taskworker_config("--shutdown-timeout", "1.5").shutdown_timeout == 1.5
    assert taskworker_config().follow_definitions
    del settings.TASKS_SHUTDOWN_TIMEOUT
    assert taskworker_config().shutdown_timeout == DEFAULTS.shutdown_timeout


def test_taskscheduler_takes_its_options_over_the_settings_over_the_defaults(settings):
    from taskq.queues import conf
    from taskq.queues.engine import ValidationError
    from taskq.worker.scheduler import from_settings

    settings.TASKS_SCHEDULER_INTERVAL = 2.0
    settings.TASKS_SCHEDULER_GRACE_SECONDS = 30.0
    scheduler = from_settings(conf.taskq_settings())
    assert (scheduler.interval, scheduler.grace) == (2.0, 30.0)
    scheduler = from_settings(conf.taskq_settings(), interval=0.5, grace=0)
    assert (scheduler.interval, scheduler.grace) == (0.5, 0)
    assert (from_settings(DEFAULTS).interval, from_settings(DEFAULTS).grace) == (1.0, 60.0)
    with pytest.raises(ValidationError, match="TASKS_SCHEDULER_INTERVAL"):
        from_settings(dataclasses.replace(DEFAULTS, scheduler_interval=120.0))
