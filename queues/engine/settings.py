"""Every taskq setting in one typed object: its environment variable (also its Django setting's name), its
default and what it means. Nothing else writes a default down, and nothing else reads a setting by its name.

- ``console/settings.py`` reads the environment into it (``TaskqSettings.from_env``) and exports each value as
  the Django setting of the same name.
- In Django, everything (the worker, the scheduler, the API, the console, the CLI, the history task) reads
  ``taskq.queues.conf.taskq_settings()``, this object filled from Django's settings (``TaskqSettings.from_lookup``): a
  setting a project leaves out takes the default from here.
- Without Django, the engine's default client and the worker's handlers read ``TaskqSettings.from_env``.
- The worker's and the engine's own defaults (``WorkerConfig``, ``Limits``, ``GroupSettings``, ``SparkSettings``,
  ``DEFAULT_PREFIX``, ``DEFAULT_REDIS_URL``) are these, and each is built from the settings in one call
  (``WorkerConfig.from_settings``, ``Limits.from_settings``...).
- ``tests/test_settings_one_way.py`` fails on a setting read by its name, or a default written, anywhere else.
- The settings table of the documentation (docs/settings.md) is generated from it (``python -m
  taskq.queues.engine.settings``), and a test checks that the two agree.

Django-free, like the rest of the engine. A value that is set but cannot be parsed raises ValidationError naming
the variable, so a typo fails at start-up instead of running with a default.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .errors import ValidationError
from .nesting import DEPTH_CEILING
from .quoting import shown

_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})
_UNSET = object()


def _setting(name: str, default: Any, kind: str, doc: str, shown: str | None = None) -> Any:
    """A field of ``TaskqSettings``: ``kind`` is how its variable is parsed (str, int, float, optional float,
    bool, list, networks, patterns, paths); ``shown`` is the settings table's wording of the default where the
    value alone would mislead."""
    return field(default=default, metadata={"name": name, "kind": kind, "doc": doc, "shown": shown})


@dataclass(frozen=True)
class TaskqSettings:
    redis_url: str = _setting(
        "REDIS_URL",
        "redis://127.0.0.1:6379/0",
        "str",
        "the Redis of the engine, console and workers; `redis+sentinel://` and `redis+cluster://` too "
        "([Sentinel and Cluster](operations.md#redis-sentinel-and-cluster))",
    )
    key_prefix: str = _setting(
        "TASKS_KEY_PREFIX", "tq", "str", "prefix of every Redis key, to share a Redis between deployments"
    )
    key_format: str = _setting(
        "TASKS_KEY_FORMAT",
        "taskq",
        "format",
        "whose key layout the Redis holds: `taskq`, or `asynq` for the keys of a Go asynq v0.25-0.26 deployment "
        "(prefix `asynq`), which the console, the CLI and `taskworker` then read and write as asynq does "
        "([taskq for asynq users](asynq.md))",
    )
    lease_seconds: float = _setting(
        "TASKS_LEASE_SECONDS", 30.0, "float", "lease of a running task; a shorter lease recovers crashes faster"
    )
    heartbeat_seconds: float | None = _setting(
        "TASKS_HEARTBEAT_SECONDS", None, "optional float", "how often a worker extends its leases", "lease/6"
    )
    recoverer_seconds: float | None = _setting(
        "TASKS_RECOVERER_SECONDS", None, "optional float", "how often expired leases are recovered", "lease/2"
    )
    clock_skew_seconds: float | None = _setting(
        "TASKS_CLOCK_SKEW_SECONDS",
        None,
        "optional float",
        "how long past its expiry a lease is left alone (clock differences between machines)",
        "lease/6",
    )
    forwarder_seconds: float = _setting(
        "TASKS_FORWARDER_SECONDS", 1.0, "float", "how often due scheduled and retry tasks move to pending"
    )
    janitor_seconds: float = _setting(
        "TASKS_JANITOR_SECONDS", 8.0, "float", "how often expired completed tasks and archive excess are deleted"
    )
    group_grace_seconds: float = _setting(
        "TASKS_GROUP_GRACE_SECONDS",
        60.0,
        "float",
        "a group is due this long after its last task ([groups](groups-and-workflows.md#group-aggregation))",
    )
    group_max_delay_seconds: float = _setting(
        "TASKS_GROUP_MAX_DELAY_SECONDS", 0.0, "float", "a group is due this long after its first task (0: no limit)"
    )
    group_max_size: int = _setting("TASKS_GROUP_MAX_SIZE", 0, "int", "a group is due at this many tasks (0: no limit)")
    aggregator_seconds: float = _setting("TASKS_AGGREGATOR_SECONDS", 1.0, "float", "how often due groups are combined")
    archive_max_size: int = _setting(
        "TASKS_ARCHIVE_MAX_SIZE", 10_000, "int", "archived tasks kept per queue; trimmed tasks are really deleted"
    )
    archive_max_age_seconds: float = _setting(
        "TASKS_ARCHIVE_MAX_AGE_SECONDS",
        90 * 24 * 3600.0,
        "float",
        "how long archived tasks are kept; older ones are really deleted",
        "90 days",
    )
    event_stream_maxlen: int = _setting(
        "TASKS_EVENT_STREAM_MAXLEN", 100_000, "int", "length of each queue's event stream (approximate trimming)"
    )
    shutdown_timeout: float = _setting(
        "TASKS_SHUTDOWN_TIMEOUT",
        8.0,
        "float",
        "default of `taskworker --shutdown-timeout`: seconds running tasks get to finish on SIGTERM",
    )
    server_record_seconds: float = _setting(
        "TASKS_SERVER_RECORD_SECONDS",
        3600.0,
        "float",
        "how long a stopped or lost worker's record (how it ended, what became of its tasks) is kept "
        "([Quieting and stopping](console.md#quieting-and-stopping-a-worker))",
    )
    task_record_seconds: float = _setting(
        "TASKS_TASK_RECORD_SECONDS",
        3600.0,
        "float",
        "how long a task an operator edited, ran or retried keeps a record (outcome, failures, actions) once it is "
        "deleted on success or after its retention, for its page ([records](console.md#the-record-of-a-deleted-task)); "
        "0: none",
    )
    scheduler_interval: float = _setting(
        "TASKS_SCHEDULER_INTERVAL", 1.0, "float", "default of `taskscheduler --interval`"
    )
    scheduler_grace_seconds: float = _setting(
        "TASKS_SCHEDULER_GRACE_SECONDS",
        60.0,
        "float",
        "default of `taskscheduler --grace`: a tick reached later than this counts as missed",
    )
    analytics_schedule: str = _setting(
        "TASKS_ANALYTICS_SCHEDULE",
        "15 0 * * *",
        "str",
        "when a `taskscheduler` enqueues the daily task-history rollups (cron, UTC); empty: never",
    )
    analytics_today_schedule: str = _setting(
        "TASKS_ANALYTICS_TODAY_SCHEDULE",
        "",
        "str",
        "when a `taskscheduler` also rolls up today so far (cron, UTC; `make run` uses every 3 minutes); empty: never",
    )
    event_export: bool = _setting(
        "TASKS_EVENT_EXPORT",
        False,
        "bool",
        "run the event exporter in `taskworker` ([pipeline](spark.md#the-task-history-pipeline-and-the-history-page))",
    )
    event_export_dir: str = _setting(
        "TASKS_EVENT_EXPORT_DIR",
        "var/events",
        "str",
        "where the exporter writes events (a relative path is under the project)",
        "`<repo>/var/events`",
    )
    rollup_dir: str = _setting(
        "TASKS_ROLLUP_DIR",
        "var/rollups",
        "str",
        "where the analytics job writes rollups (a relative path is under the project)",
        "`<repo>/var/rollups`",
    )
    event_export_cap: int = _setting(
        "TASKS_EVENT_EXPORT_CAP", 1_000_000, "int", "hard cap of an exported queue's event stream"
    )
    spark_master: str = _setting(
        "SPARK_MASTER", "local[*]", "str", "where [Spark tasks](spark.md#spark-tasks) and the analytics job run"
    )
    spark_remote: str = _setting("SPARK_REMOTE", "", "str", "a Spark Connect server (`sc://host:15002`) instead")
    spark_app_name: str = _setting("SPARK_APP_NAME", "taskq", "str", "the Spark application's name")
    spark_conf: str = _setting("SPARK_CONF", "", "str", "Spark configuration: a JSON object or `k=v;k=v`")
    spark_submit_allowed_dirs: tuple[str, ...] = _setting(
        "SPARK_SUBMIT_ALLOWED_DIRS",
        (),
        "paths",
        "the directories whose applications a [`spark:submit`](spark.md#spark-submit-tasks) task "
        "may run, colon-separated (a list in Django's settings). Anyone who can enqueue `spark:submit` runs code on "
        "the worker",
        "none: any path",
    )
    api_ttr_seconds: float = _setting(
        "TASKS_API_TTR_SECONDS",
        30.0,
        "float",
        "HTTP API: the lease (TTR) of a consumed or extended task when the request gives no `ttr`",
    )
    api_recovery_skew_seconds: float = _setting(
        "TASKS_API_RECOVERY_SKEW_SECONDS",
        1.0,
        "float",
        "HTTP API: grace past a TTR before a consume recovers the lease",
    )
    api_max_waiters: int = _setting(
        "TASKS_API_MAX_WAITERS",
        64,
        "int",
        "HTTP API: consumes with a `timeout` that may wait at once per console process (a thread each); one more "
        "is refused with 429 `too_many_waiters` ([HTTP API](http-api.md))",
    )
    eager: bool = _setting(
        "TASKS_EAGER",
        False,
        "bool",
        "for tests: enqueueing runs the handler (or the `@task` function) inline and writes nothing "
        "([Testing your handlers](handlers.md#testing-your-handlers), [Testing your tasks](testing.md))",
    )
    eager_propagates: bool = _setting(
        "TASKS_EAGER_PROPAGATES",
        True,
        "bool",
        "for tests: an eager handler's exception reaches the caller (not a `@task` function's: its result is "
        "`FAILED`, as Django's `ImmediateBackend` reports it)",
    )
    console_read_only: bool = _setting(
        "TASKS_CONSOLE_READ_ONLY",
        False,
        "bool",
        "the console shows everything and offers no action (see [The console](console.md))",
    )
    console_trace_url: str = _setting(
        "TASKS_CONSOLE_TRACE_URL",
        "",
        "str",
        "a trace viewer's URL with `{trace_id}` where a trace id goes (Jaeger's "
        "`http://localhost:16686/trace/{trace_id}`): the task page links each trace id there; unset, it shows them "
        "as text ([Tracing](tracing.md#the-console-and-the-http-api))",
    )
    max_payload_depth: int = _setting(
        "TASKS_MAX_PAYLOAD_DEPTH",
        64,  # real payloads stay under ten
        "int",
        f"deepest nesting of arrays and objects a JSON payload may have, 1 to {DEPTH_CEILING} "
        "([Payload limits](producing.md#payload-limits))",
    )
    redact_types: tuple[str, ...] = _setting(
        "TASKS_REDACT_TYPES",
        (),
        "list",
        "task types (prefixes) whose payloads people see masked ([Redaction](console.md#redaction)); in Django "
        'settings both lists may be one dict, `TASKS_REDACT = {"types": [...], "keys": [...]}`, which wins over '
        "the two",
    )
    redact_keys: tuple[str, ...] = _setting(
        "TASKS_REDACT_KEYS", (), "list", "JSON keys whose values people see masked, in every task"
    )
    #: As given (a list becomes a tuple): the patterns are checked where the rules are built
    #: (``redaction_patterns``), and a bad value is reported by the system check ``taskq.E110``.
    redact_patterns: Any = _setting(
        "TASKS_REDACT_PATTERNS",
        (),
        "patterns",
        "regular expressions whose matches people see masked in every string of every task: payload, result, "
        "headers, error text, and in the audit log and search ([Redaction](console.md#redaction)); in the "
        "environment a JSON array, `TASKS_REDACT_PATTERNS='[\"(?i)password is \\\\S+\"]'`",
    )
    audit_unredacted: bool = _setting(
        "TASKS_AUDIT_UNREDACTED",
        False,
        "bool",
        "the audit log also keeps the unredacted payload of an edited or created task, readable with "
        "`taskq.view_unredacted` (each read audited); off: only the masked payload "
        "([Redaction](console.md#redaction))",
    )
    metrics_token: str = _setting(
        "METRICS_TOKEN",
        "",
        "str",
        "bearer token that opens `/metrics` to a scrape from anywhere; a scrape that sends a wrong one is refused "
        "(401) from anywhere, loopback included ([Metrics](operations.md#metrics-and-grafana))",
    )
    #: As given in Django's settings (a list becomes a tuple): an entry that is no network is reported by the system
    #: check ``taskq.E201``; from the environment it is refused when read (``parse_value``), so the start fails.
    metrics_allow: tuple[str, ...] = _setting(
        "METRICS_ALLOW",
        (),
        "networks",
        "networks (CIDRs, comma-separated) whose scrapes `/metrics` answers without the token; loopback always is, "
        "and with `DEBUG` on everyone",
    )

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> TaskqSettings:
        """From environment variables; unset and empty ones take the default (so a compose file can write
        ``FOO: ""`` to fall back)."""
        values: dict[str, Any] = {}
        for f in dataclasses.fields(cls):
            raw = environ.get(f.metadata["name"])
            if raw is not None and raw.strip():
                values[f.name] = parse_value(f.metadata["name"], f.metadata["kind"], raw.strip())
        return cls(**values)

    @classmethod
    def from_lookup(cls, lookup: Callable[[str, Any], Any]) -> TaskqSettings:
        """From Python values, such as Django's settings: ``lookup(name, missing)`` returns ``missing`` for a
        setting that is not there, which then takes the default. Numbers, booleans and lists are made the field's
        type (``"30"`` and ``30`` are 30.0 seconds), so no reader casts again; a value that is no number raises
        ValidationError naming the setting. A ``TASKS_REDACT`` that is set gives both redaction lists."""
        values: dict[str, Any] = {}
        for f in dataclasses.fields(cls):
            value = lookup(f.metadata["name"], _UNSET)
            if value is not _UNSET:
                values[f.name] = _typed(f.metadata["name"], f.metadata["kind"], value)
        combined = lookup(REDACT_SETTING, None)
        if combined is not None:
            values["redact_types"], values["redact_keys"] = redact_lists(combined)
        return cls(**values)

    def as_settings(self) -> dict[str, Any]:
        """Setting name -> value, to export as Django settings."""
        return {f.metadata["name"]: getattr(self, f.name) for f in dataclasses.fields(self)}


DEFAULTS = TaskqSettings()

#: The redaction lists as one Django setting, ``TASKS_REDACT = {"types": [...], "keys": [...]}``: what
#: ``console/settings.py`` exports, projects write and tests override. When set it wins over TASKS_REDACT_TYPES
#: and TASKS_REDACT_KEYS (``from_lookup``); it has no environment variable of its own.
REDACT_SETTING = "TASKS_REDACT"
_REDACT_FIELDS = ("types", "keys")


def redact_lists(value: Any) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``TASKS_REDACT``'s (types, keys); ValidationError naming the setting when it is not a dict of those two
    lists of strings. An empty value is no rules."""
    value = value or {}
    if isinstance(value, Mapping) and "patterns" in value:
        raise ValidationError(
            f'{REDACT_SETTING} takes "types" and "keys"; value patterns are a setting of their own, '
            "TASKS_REDACT_PATTERNS",
            op="settings",
        )
    if not isinstance(value, Mapping) or not set(value) <= set(_REDACT_FIELDS):
        raise ValidationError(
            f'{REDACT_SETTING} must be a dict with "types" and "keys" lists, got {shown(value)}', op="settings"
        )
    lists = [value.get(name) or [] for name in _REDACT_FIELDS]
    for name, items in zip(_REDACT_FIELDS, lists, strict=True):
        if not isinstance(items, list | tuple) or not all(isinstance(item, str) for item in items):
            raise ValidationError(
                f'{REDACT_SETTING}["{name}"] must be a list of strings, got {shown(items)}', op="settings"
            )
    return tuple(lists[0]), tuple(lists[1])


def _typed(name: str, kind: str, value: Any) -> Any:
    """A Python value as ``kind``. Text stays as given: ``SPARK_CONF`` may also be a dict in Django's settings."""
    try:
        if kind == "int":
            return int(value)
        if kind == "float" or (kind == "optional float" and value is not None):
            return float(value)
    except (TypeError, ValueError):
        what = "an integer" if kind == "int" else "a number"
        raise ValidationError(f"{name} must be {what}, got {shown(value)}", op="settings") from None
    if kind == "bool":
        return bool(value)
    if kind in ("list", "networks") or (kind in ("patterns", "paths") and isinstance(value, list | tuple)):
        return tuple(value)
    if kind == "paths":
        return _paths(str(value))
    if kind == "format":
        return _key_format(name, value)
    return value  # text, and patterns that are no list: the system check names what is wrong with them


def _paths(raw: str) -> tuple[str, ...]:
    """Colon-separated paths, as PATH is written; empty parts are dropped."""
    return tuple(part for part in raw.split(":") if part)


def parse_value(name: str, kind: str, raw: str) -> Any:
    """A variable's text as ``kind`` (str, int, float, optional float, bool, list, networks, patterns, paths,
    format): the one parser of taskq's settings and of the console's Django ones (``console/env.py``). Raises
    ValidationError naming ``name``.
    Patterns are a JSON array (a regular expression may hold commas); text that is not JSON is kept as it is, for
    the system check that reads the patterns to refuse, naming the setting."""
    if kind in ("int", "float", "optional float"):
        return _typed(name, kind, raw)
    if kind == "bool":
        lowered = raw.lower()
        if lowered in _TRUE or lowered in _FALSE:
            return lowered in _TRUE
        raise ValidationError(f"{name} must be one of 1/true/yes/on or 0/false/no/off, got {shown(raw)}", op="settings")
    if kind == "list":
        return tuple(item.strip() for item in raw.split(",") if item.strip())
    if kind == "paths":
        return _paths(raw)
    if kind == "networks":
        return _networks(name, parse_value(name, "list", raw))
    if kind == "patterns":
        try:
            return _typed(name, kind, json.loads(raw))
        except ValueError:
            return raw
    if kind == "format":
        return _key_format(name, raw)
    return raw


#: The key layouts taskq reads and writes: its own, and Go asynq's (``engine/asynq``).
KEY_FORMATS = ("taskq", "asynq")


def _key_format(name: str, value: Any) -> str:
    if value not in KEY_FORMATS:
        raise ValidationError(f"{name} must be one of {', '.join(KEY_FORMATS)}, got {shown(value)}", op="settings")
    return str(value)


def _networks(name: str, values: tuple[str, ...]) -> tuple[str, ...]:
    """``values``, each checked to be a network (a CIDR such as ``10.0.0.0/8``, or a bare address)."""
    for value in values:
        try:
            ipaddress.ip_network(value, strict=False)
        except ValueError:
            raise ValidationError(
                f"{name}: {shown(value)} is not a network (CIDR such as 10.0.0.0/8)", op="settings"
            ) from None
    return values


def _shown(f: dataclasses.Field[Any]) -> str:
    value = f.default
    if f.metadata["shown"]:
        return str(f.metadata["shown"])
    if value is None or value in ("", ()):
        return "none"
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, int | float):
        return f"{value:,g}" if value < 1_000_000 else f"{int(value):,}"
    return f"`{value}`"


def markdown_table() -> str:
    """The settings table of docs/settings.md, one row per setting. Its links are relative to docs/, where the
    page is."""
    rows = ["| variable | default | meaning |", "|---|---|---|"]
    for f in dataclasses.fields(TaskqSettings):
        rows.append(f"| `{f.metadata['name']}` | {_shown(f)} | {f.metadata['doc']} |")
    return "\n".join(rows)


if __name__ == "__main__":
    print(markdown_table())
