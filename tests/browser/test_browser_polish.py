"""Issue 16's rough edges, in a real headless Chromium: each confirmation names its action, and the bulk bar
under an active filter acts on the matches, paged like a tab."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.browser


def test_deleting_from_the_task_page_asks_with_the_word_delete(console, engine, seed):
    task_id = seed.archived(queue="emails", error="bounced")
    console.login(f"/queues/emails/tasks/{task_id}/")
    console.click("button[name=action][value=delete]")
    assert console.confirm() == f"Delete task {task_id}? It cannot be undone."
    console.wait_text("1 task deleted", ".messages")
    assert engine.queue_info("emails").archived == 0


def test_filtered_bulk_delete_confirms_the_count_of_matches_and_deletes_only_them(console, engine, seed):
    from django.contrib.auth import get_user_model

    from console.models import ConsolePreference

    user = get_user_model().objects.get(username=console.username)
    ConsolePreference.objects.update_or_create(user=user, defaults={"rows_per_page": 10})
    for n in range(12):
        seed.pending("email:deliver", {"to": f"user{n}@example.com"}, queue="emails")
    seed.pending("sms:send", {"to": "user0@example.com"}, queue="emails")
    console.login("/queues/emails/?state=pending")
    console.find("input[name=type]").send_keys("email:")
    console.find("input[name=text]").send_keys("example.com")
    console.click("form:has(input[name=text]) button[type=submit]")
    console.wait_text("12 matches", "main")
    assert len(console.find_all("table.tasks tbody tr")) == 10
    console.click("nav.pager a[href*='page=2']")
    console.wait_for(lambda d: len(console.find_all("table.tasks tbody tr")) == 2, "the second page of matches")
    console.click(".bulk button.danger")
    assert console.confirm() == "Delete all 12 pending tasks of “emails” matching type email:* text “example.com”?"
    console.wait_text("12 matching tasks deleted", ".messages")
    assert engine.queue_info("emails").pending == 1  # the sms task did not match
