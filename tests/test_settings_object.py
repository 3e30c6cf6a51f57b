"""``taskq.queues.engine.settings.TaskqSettings`` is the one place taskq's settings and their defaults are written:
the settings table of the documentation (docs/settings.md) is its output, Django's settings export every one of
them, and a bad value is refused with the variable's name."""

from __future__ import annotations

import dataclasses
import runpy
from pathlib import Path

import pytest

from taskq.queues import conf
from taskq.queues.engine import GroupSettings, Limits, ValidationError
from taskq.queues.engine.settings import DEFAULTS, TaskqSettings, markdown_table
from taskq.queues.sparkconf import SparkSettings
from taskq.worker.config import WorkerConfig

ROOT = Path(__file__).resolve().parents[1]
NAMES = [f.metadata["name"] for f in dataclasses.fields(TaskqSettings)]


def test_the_settings_page_table_is_the_objects_output():
    assert markdown_table() in (ROOT / "docs" / "settings.md").read_text(), (
        "docs/settings.md's settings table differs from `python -m taskq.queues.engine.settings`: paste its output"
    )


def test_every_setting_is_exported_by_djangos_settings(monkeypatch):
    for name in NAMES:
        monkeypatch.delenv(name, raising=False)
    exported = runpy.run_path(str(ROOT / "console" / "settings.py"))
    for f in dataclasses.fields(TaskqSettings):
        value = exported[f.metadata["name"]]
        if f.name.endswith("_dir"):  # relative directories are made absolute under the project
            assert value == str(ROOT / f.default), f.name
        else:
            assert value == f.default, f.name


def test_the_environment_is_parsed_by_kind_and_bad_values_are_named():
    env = {
        "TASKS_LEASE_SECONDS": "12.5",
        "TASKS_GROUP_MAX_SIZE": "7",
        "TASKS_EVENT_EXPORT": "yes",
        "TASKS_REDACT_KEYS": " card, ,ssn ",
        "TASKS_HEARTBEAT_SECONDS": "",  # empty: the default
    }
    parsed = TaskqSettings.from_env(env)
    assert (parsed.lease_seconds, parsed.group_max_size, parsed.event_export) == (12.5, 7, True)
    assert parsed.redact_keys == ("card", "ssn") and parsed.heartbeat_seconds is None
    with pytest.raises(ValidationError, match="TASKS_GROUP_MAX_SIZE must be an integer"):
        TaskqSettings.from_env({"TASKS_GROUP_MAX_SIZE": "many"})
    with pytest.raises(ValidationError, match="TASKS_EVENT_EXPORT must be one of"):
        TaskqSettings.from_env({"TASKS_EVENT_EXPORT": "maybe"})


def test_the_metrics_settings_are_fields_checked_from_the_environment():
    """METRICS_ALLOW from the environment is a list of networks, each checked when read (the start fails on a typo);
    from Django's settings it is taken as given, for the system check taskq.E201 to name a bad entry."""
    parsed = TaskqSettings.from_env({"METRICS_TOKEN": "t0ken", "METRICS_ALLOW": "10.0.0.0/8, fd00::/8"})
    assert (parsed.metrics_token, parsed.metrics_allow) == ("t0ken", ("10.0.0.0/8", "fd00::/8"))
    with pytest.raises(ValidationError, match='METRICS_ALLOW: "nope" is not a network'):
        TaskqSettings.from_env({"METRICS_ALLOW": "10.0.0.0/8,nope"})
    looked_up = {"METRICS_ALLOW": ["nope"]}
    assert TaskqSettings.from_lookup(lambda name, missing: looked_up.get(name, missing)).metrics_allow == ("nope",)


def test_the_engine_and_the_worker_take_their_defaults_from_it():
    config = WorkerConfig()
    assert (config.lease_seconds, config.shutdown_timeout, config.forwarder_interval, config.janitor_interval) == (
        DEFAULTS.lease_seconds,
        DEFAULTS.shutdown_timeout,
        DEFAULTS.forwarder_seconds,
        DEFAULTS.janitor_seconds,
    )
    assert (config.aggregator_interval, config.export_event_cap) == (
        DEFAULTS.aggregator_seconds,
        DEFAULTS.event_export_cap,
    )
    assert Limits() == Limits(DEFAULTS.event_stream_maxlen, DEFAULTS.archive_max_size, DEFAULTS.archive_max_age_seconds)
    assert GroupSettings() == GroupSettings(
        DEFAULTS.group_grace_seconds, DEFAULTS.group_max_delay_seconds, DEFAULTS.group_max_size
    )
    spark = SparkSettings()
    assert (spark.master, spark.app_name) == (DEFAULTS.spark_master, DEFAULTS.spark_app_name)


def test_a_project_that_leaves_a_setting_out_gets_the_default(settings):
    del settings.TASKS_JANITOR_SECONDS
    assert conf.taskq_settings().janitor_seconds == DEFAULTS.janitor_seconds
    settings.TASKS_LEASE_SECONDS = 12.0
    assert conf.taskq_settings().lease_seconds == 12.0


def test_djangos_values_are_made_the_fields_types_and_bad_ones_are_named():
    values = {"TASKS_LEASE_SECONDS": "12", "TASKS_GROUP_MAX_SIZE": 7.0, "TASKS_REDACT_KEYS": ["card"]}
    typed = TaskqSettings.from_lookup(lambda name, missing: values.get(name, missing))
    assert (typed.lease_seconds, typed.group_max_size, typed.redact_keys) == (12.0, 7, ("card",))
    assert typed.heartbeat_seconds is None and typed.janitor_seconds == DEFAULTS.janitor_seconds
    with pytest.raises(ValidationError, match='TASKS_LEASE_SECONDS must be a number, got "soon"'):
        TaskqSettings.from_lookup(lambda name, missing: "soon" if name == "TASKS_LEASE_SECONDS" else missing)


def test_tasks_redact_gives_both_lists_and_wins_over_them():
    values = {"TASKS_REDACT_KEYS": ("ignored",), "TASKS_REDACT": {"types": ["billing:"], "keys": ["card"]}}
    typed = TaskqSettings.from_lookup(lambda name, missing: values.get(name, missing))
    assert (typed.redact_types, typed.redact_keys) == (("billing:",), ("card",))
    alone = TaskqSettings.from_lookup(lambda name, missing: ("card",) if name == "TASKS_REDACT_KEYS" else missing)
    assert (alone.redact_types, alone.redact_keys) == ((), ("card",))


def test_the_settings_are_read_once_until_one_changes(settings):
    first = conf.taskq_settings()
    assert conf.taskq_settings() is first  # a request reads the one object, not forty settings
    settings.TASKS_CONSOLE_READ_ONLY = True
    assert conf.taskq_settings() is not first and conf.taskq_settings().console_read_only is True
    del settings.TASKS_CONSOLE_READ_ONLY
    assert conf.taskq_settings().console_read_only is False
