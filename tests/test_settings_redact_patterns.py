"""``TASKS_REDACT_PATTERNS``: read through the settings object (a list in Django's settings, a JSON array in the
environment), and refused at start-up by the system check ``taskq.E110`` when it is no list of strings, a pattern
does not compile or is one of the risky kinds ``taskq.queues.engine.redaction_patterns`` names. Where no check runs,
masking fails closed: the rules raise rather than show anything unmasked."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from taskq.queues.engine.settings import DEFAULTS, TaskqSettings
from taskq.queues.redaction_checks import check_redaction
from taskq.queues.redaction_rules import rules

ROOT = Path(__file__).resolve().parents[1]


def test_the_setting_is_declared_with_no_patterns_by_default():
    assert DEFAULTS.redact_patterns == () and DEFAULTS.as_settings()["TASKS_REDACT_PATTERNS"] == ()


def test_the_environment_gives_a_json_array_and_django_a_list():
    parsed = TaskqSettings.from_env({"TASKS_REDACT_PATTERNS": r'["(?i)password is \\S+", "\\d{4},\\d{4}"]'})
    assert parsed.redact_patterns == (r"(?i)password is \S+", r"\d{4},\d{4}")  # a comma inside a pattern is kept
    typed = TaskqSettings.from_lookup(lambda name, missing: [r"sk_\w+"] if name == "TASKS_REDACT_PATTERNS" else missing)
    assert typed.redact_patterns == (r"sk_\w+",)
    # Not JSON: kept as written, for the check to refuse by name (a regular expression is rarely JSON).
    assert TaskqSettings.from_env({"TASKS_REDACT_PATTERNS": r"password \S+"}).redact_patterns == r"password \S+"


def test_the_patterns_are_not_part_of_tasks_redact(settings):
    settings.TASKS_REDACT = {"keys": ["password"], "patterns": ["x+"]}
    with pytest.raises(ImproperlyConfigured, match="value patterns are a setting of their own, TASKS_REDACT_PATTERNS"):
        rules()


def test_good_patterns_pass_the_check_and_are_the_rules(settings):
    settings.TASKS_REDACT_PATTERNS = [r"(?i)password is \S+"]
    assert check_redaction() == []
    assert [p.pattern for p in rules().patterns] == [r"(?i)password is \S+"]


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (r"password is \S+", "TASKS_REDACT_PATTERNS must be a list of regular expressions (strings), got str"),
        ({"password": r"\S+"}, "TASKS_REDACT_PATTERNS must be a list of regular expressions (strings), got dict"),
        ([r"\S+", None], "TASKS_REDACT_PATTERNS[1] must be a regular expression (a string), got NoneType None"),
        ([["nested"]], "TASKS_REDACT_PATTERNS[0] must be a regular expression (a string), got list"),
        (["[unclosed"], "TASKS_REDACT_PATTERNS[0] '[unclosed' is not a valid regular expression"),
        (["x?"], "TASKS_REDACT_PATTERNS[0] 'x?' can match the empty string"),
        (["(a+)+$"], "TASKS_REDACT_PATTERNS[0] '(a+)+$' nests an unbounded repetition inside another"),
    ],
)
def test_bad_patterns_are_a_named_check_error_and_masking_fails_closed(settings, value, message):
    settings.TASKS_REDACT_PATTERNS = value
    [error] = check_redaction()
    assert error.id == "taskq.E110" and error.is_serious()
    assert error.msg.startswith(message), error.msg
    assert "JSON array" in error.hint
    with pytest.raises(ImproperlyConfigured) as refused:
        rules()
    assert str(refused.value) == error.msg


def manage_check(**env: str) -> subprocess.CompletedProcess[str]:
    environ = {**os.environ, "DJANGO_SETTINGS_MODULE": "taskq.console.settings", **env}
    return subprocess.run(
        [sys.executable, "manage.py", "check"], cwd=ROOT, env=environ, capture_output=True, text=True, timeout=120
    )


def test_a_bad_pattern_in_the_environment_stops_start_up_with_the_named_check():
    done = manage_check(TASKS_REDACT_PATTERNS='["(?i)password is \\\\S+", "(unclosed"]')
    assert done.returncode != 0
    assert "(taskq.E110) TASKS_REDACT_PATTERNS[1] '(unclosed' is not a valid regular expression" in done.stderr
    unparsed = manage_check(TASKS_REDACT_PATTERNS=r"password is \S+")
    assert unparsed.returncode != 0 and "(taskq.E110) TASKS_REDACT_PATTERNS must be a list" in unparsed.stderr
    ok = manage_check(TASKS_REDACT_PATTERNS='["(?i)password is \\\\S+"]')
    assert ok.returncode == 0, ok.stderr
