"""The Django management command itself, through ``call_command`` (how other Django code would call it)."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import CommandError, call_command


def test_call_command_runs_the_cli(cli, seed):
    seed.pending()
    stdout = io.StringIO()
    call_command("tasks", "queue", "inspect", "default", "--json", stdout=stdout)
    assert json.loads(stdout.getvalue())["pending"] == 1


def test_call_command_failure_raises_command_error(cli):
    stderr = io.StringIO()
    with pytest.raises(CommandError) as raised:
        call_command("tasks", "queue", "inspect", "nope", stdout=io.StringIO(), stderr=stderr)
    assert raised.value.returncode == 1
    assert stderr.getvalue() == 'error: queue "nope" not found\n'
