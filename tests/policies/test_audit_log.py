"""The audit log: times to the second in ISO 8601 with the zone, a bounded list of task ids plus their count, and
action names that match the buttons (the data migration renames the old ones)."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.test import Client as WebClient

from taskq.queues.audit import AUDIT_TASK_IDS, record_action
from taskq.queues.models import AuditLog

pytestmark = pytest.mark.django_db

ISO_SECONDS = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00")


def test_an_entry_keeps_a_bounded_list_of_ids_and_counts_them_all():
    ids = [f"t{n}" for n in range(AUDIT_TASK_IDS + 50)]
    entry = record_action(None, "delete_task", queue="mail", task_ids=ids, username="cli:ada")
    entry.refresh_from_db()
    assert entry.task_ids == ids[:AUDIT_TASK_IDS] and entry.task_count == AUDIT_TASK_IDS + 50
    assert entry.tasks_shown.endswith(f"t{AUDIT_TASK_IDS - 1} … and 50 more")
    few = record_action(None, "run_task", task_ids=["a", "b"])
    assert (few.task_count, few.tasks_shown) == (2, "a, b")
    whole_state = record_action(None, "delete_all", queue="mail", detail="state=retry", task_count=1200)
    assert (whole_state.task_ids, whole_state.task_count, whole_state.tasks_shown) == ([], 1200, "1200 tasks")


def test_times_are_iso_8601_to_the_second_with_the_zone():
    entry = record_action(None, "pause_queue", queue="mail")
    assert ISO_SECONDS.fullmatch(entry.when)
    assert entry.when == entry.created_at.replace(microsecond=0).isoformat()


def test_the_audit_pages_show_the_time_to_the_second_and_the_tasks():
    root = User.objects.create_superuser("root", password="pw")
    entry = record_action(root, "delete_task", queue="mail", task_ids=[f"id-{n}" for n in range(AUDIT_TASK_IDS + 3)])
    browser = WebClient()
    browser.force_login(root)
    listing = browser.get("/admin/taskq/auditlog/").content.decode()
    assert entry.when in listing and f">{AUDIT_TASK_IDS + 3}<" in listing
    detail = browser.get(f"/admin/taskq/auditlog/{entry.pk}/change/").content.decode()
    assert entry.when in detail and "id-0, id-1" in detail and "… and 3 more" in detail


@pytest.mark.django_db(transaction=True)
def test_the_migration_counts_old_entries_and_renames_unpause_queue_after_its_button():
    executor = MigrationExecutor(connection)
    executor.migrate([("queues", "0003_edit_task_permission")])
    old = executor.loader.project_state([("queues", "0003_edit_task_permission")]).apps.get_model("queues", "AuditLog")
    resumed = old.objects.create(action="unpause_queue", queue="mail")
    deleted = old.objects.create(action="delete_task", queue="mail", task_ids=["a", "b", "c"])
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())
    assert AuditLog.objects.get(pk=resumed.pk).action == "resume_queue"
    assert AuditLog.objects.get(pk=deleted.pk).task_count == 3
