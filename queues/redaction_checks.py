"""The system check of the redaction settings (``manage.py check``, and every command that runs checks: the
console's ``runserver`` and ``migrate``, ``taskworker``):

- taskq.E110: ``TASKS_REDACT`` (or ``TASKS_REDACT_TYPES`` / ``TASKS_REDACT_KEYS``) or ``TASKS_REDACT_PATTERNS``
  cannot be used: a type or key that is no name, patterns that are not a list of strings, a pattern that does
  not compile, or one refused as risky (see ``taskq.queues.engine.redaction_patterns``).

A process that runs no checks (a bare ``daphne``, the ``tasks`` command) fails closed instead: every place that
masks asks for the rules, which raise ImproperlyConfigured with the same text, so nothing is shown unmasked.
"""

from __future__ import annotations

from typing import Any

from django.core import checks
from django.core.exceptions import ImproperlyConfigured

from .redaction_rules import rules

HINT = (
    'TASKS_REDACT_PATTERNS is a list of Python regular expressions, e.g. [r"(?i)password is \\S+"]; in the '
    "environment, a JSON array. See the Redaction section of docs/console.md."
)


@checks.register()
def check_redaction(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    try:
        rules()
    except ImproperlyConfigured as exc:
        return [checks.Error(str(exc), hint=HINT, id="taskq.E110")]
    return []
