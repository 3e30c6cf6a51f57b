"""One inspector per console process: every request reads and acts through the same broker and connection pool,
and each operator's action still records that operator as its actor."""

from __future__ import annotations

import pytest
from console_support import logged_in, make_user

from taskq.console.views.common import acting_inspector, inspector
from taskq.queues import handles

pytestmark = pytest.mark.django_db


def test_two_operators_act_through_one_inspector_and_each_action_records_its_operator(seed, engine, audit, rf):
    otto = logged_in(make_user("otto", "view_console", "operate_console"))
    olga = logged_in(make_user("olga", "view_console", "operate_console"))
    first, second = seed.pending(), seed.pending()
    for client, task_id in ((otto, first), (olga, second)):
        response = client.post("/queues/default/batch/", {"action": "archive", "task_ids": [task_id]})
        assert response.status_code == 302
    # Each archive's event names the operator whose request took it.
    assert [engine.task_events("default", t)[-1].worker for t in (first, second)] == ["console:otto", "console:olga"]
    assert [engine.get_task("default", t).state for t in (first, second)] == ["archived", "archived"]
    # The reads, both requests and the fixture's engine went through one inspector: one handle, one broker.
    assert len([key for key in handles._handles if key[0] == "inspector"]) == 1
    request = rf.post("/")
    request.user = make_user("olivia", "view_console", "operate_console")
    acting = acting_inspector(request)
    assert acting.broker is inspector().broker is engine.broker
    assert (acting.actor, inspector().actor, engine.actor) == ("console:olivia", "operator", "operator")


def test_a_settings_change_gives_an_inspector_of_the_new_settings(settings, engine):
    before = inspector()
    settings.TASKS_KEY_PREFIX = "other"
    after = inspector()
    assert after.broker is not before.broker and after.keys.prefix != before.keys.prefix
    assert inspector().broker is after.broker  # and it is kept while the settings stay
