"""Fixtures of the console tests: the engine pointed at the flushed test database, users for each role, and a
seeder that puts tasks in every state the way the engine's scripts do."""

from __future__ import annotations

import pytest
from console_support import logged_in, make_user
from django.test import Client


@pytest.fixture
def viewer(db):
    return make_user("vera", "view_console")


@pytest.fixture
def operator(db):
    return make_user("otto", "view_console", "operate_console")


@pytest.fixture
def nobody(db):
    return make_user("nina")


@pytest.fixture
def viewer_client(viewer) -> Client:
    return logged_in(viewer)


@pytest.fixture
def operator_client(operator) -> Client:
    return logged_in(operator)


@pytest.fixture
def nobody_client(nobody) -> Client:
    return logged_in(nobody)


@pytest.fixture
def audit(monkeypatch):
    """Every record_action call the console makes, passed on to the real audit log."""
    import taskq.queues.audit

    calls: list[dict] = []
    real = taskq.queues.audit.record_action

    def spy(user, action, queue="", task_ids=None, detail="", task_count=None, **more):
        call = {"user": user.get_username(), "action": action, "queue": queue, "task_ids": task_ids, "detail": detail}
        calls.append(call if task_count is None else {**call, "task_count": task_count})
        return real(user, action, queue=queue, task_ids=task_ids, detail=detail, task_count=task_count, **more)

    monkeypatch.setattr(taskq.queues.audit, "record_action", spy)
    return calls
