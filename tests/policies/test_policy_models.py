"""The models validate what the engine would refuse, the roles exist as groups, the audit log records."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import AnonymousUser, Group, User
from django.core.exceptions import ValidationError

from taskq.queues.audit import record_action
from taskq.queues.models import AuditLog, QueueDefinition, RetentionPolicy, UniquePolicy

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    "fields",
    [
        {"name": "bad{tag}"},
        {"name": ""},
        {"name": "x" * 129},
        {"name": "tab\there"},
        {"name": "ok", "weight": 0},
        {"name": "ok", "weight": 1001},
        {"name": "ok", "concurrency_cap": -1},
    ],
)
def test_queue_definition_refuses_what_the_engine_would(fields):
    with pytest.raises(ValidationError):
        QueueDefinition(**fields).full_clean()


def test_queue_definition_accepts_unicode_and_separators():
    QueueDefinition(name="emails:bulk/ünïcode", weight=1000, rank=-3, concurrency_cap=5).full_clean()


def test_unique_policy_needs_a_pattern_and_a_positive_ttl():
    UniquePolicy(type_pattern="email:", ttl=60).full_clean()
    for bad in (
        UniquePolicy(type_pattern="", ttl=60),
        UniquePolicy(type_pattern="a", ttl=0),
        UniquePolicy(type_pattern="a", ttl=10**9),
    ):
        with pytest.raises(ValidationError):
            bad.full_clean()


def test_retention_policy_rules():
    RetentionPolicy(completed_retention=60).full_clean()  # the default rule
    RetentionPolicy(queue="q", archive_max_size=10, archive_max_age=3600).full_clean()
    RetentionPolicy(queue="q", type_pattern="email:", completed_retention=60).full_clean()
    with pytest.raises(ValidationError, match="whole queue"):
        RetentionPolicy(type_pattern="email:", archive_max_size=10).full_clean()
    with pytest.raises(ValidationError, match="at least one"):
        RetentionPolicy(queue="q").full_clean()
    RetentionPolicy.objects.create(queue="q", completed_retention=1)
    with pytest.raises(ValidationError):
        RetentionPolicy(queue="q", completed_retention=2).full_clean()  # one rule per queue and type


def test_console_groups_hold_the_console_permissions():
    viewers = Group.objects.get(name="Console viewers")
    operators = Group.objects.get(name="Console operators")
    assert {p.codename for p in viewers.permissions.all()} == {"view_console"}
    assert {p.codename for p in operators.permissions.all()} == {"view_console", "operate_console"}
    user = User.objects.create_user("olga")
    user.groups.add(operators)
    assert user.has_perm("taskq.operate_console") and user.has_perm("taskq.view_console")


def test_record_action_keeps_who_what_and_which_tasks():
    user = User.objects.create_user("ada")
    entry = record_action(user, "task.run", queue="critical", task_ids=["t1", "t2"], detail="2 done")
    entry.refresh_from_db()
    assert (entry.user, entry.username, entry.action, entry.queue, entry.task_ids, entry.detail) == (
        user,
        "ada",
        "task.run",
        "critical",
        ["t1", "t2"],
        "2 done",
    )
    assert entry.created_at is not None
    anonymous = record_action(AnonymousUser(), "queue.pause")
    assert anonymous.user is None and anonymous.username == "" and anonymous.task_ids == []
    user.delete()
    assert AuditLog.objects.get(pk=entry.pk).username == "ada"  # kept after the user is gone
