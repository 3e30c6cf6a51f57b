"""The console offers exactly the engine's action table (``taskq.queues.engine.actions``): per state, the queue
page's row and bulk buttons and the task page's visible buttons are the table's actions for that state, and every
task action the console dispatches is done exactly where the table says (refused, and reported, elsewhere)."""

from __future__ import annotations

from html.parser import HTMLParser

import pytest
from django.contrib.messages import get_messages

from taskq.console.forms import StateBulkForm, TaskBatchForm
from taskq.console.views.actions import DONE
from taskq.console.views.workflows import BUTTONS
from taskq.queues.engine import TaskNotFoundError
from taskq.queues.engine.actions import STATE_ACTIONS, TASK_ACTIONS, WORKFLOW_ACTIONS, state_actions_for

pytestmark = pytest.mark.django_db

STATES = ("pending", "active", "scheduled", "retry", "archived", "completed", "aggregating", "waiting")


class ActionButtons(HTMLParser):
    """The ``action`` values a page posts: submit buttons named ``action`` (the row and task buttons, with
    whether each is hidden) and hidden inputs named ``action`` (one per bulk form)."""

    def __init__(self) -> None:
        super().__init__()
        self.buttons: dict[str, bool] = {}  # action -> shown
        self.bulk: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if a.get("name") != "action" or a.get("value") is None:
            return
        if tag == "button":
            self.buttons[str(a["value"])] = "hidden" not in a
        elif tag == "input" and a.get("type") == "hidden":
            self.bulk.append(str(a["value"]))


def buttons_of(html: bytes) -> ActionButtons:
    parser = ActionButtons()
    parser.feed(html.decode())
    return parser


def offered(state: str) -> list[str]:
    return [name for name, action in TASK_ACTIONS.items() if state in action.states]


@pytest.mark.parametrize("state", STATES)
def test_the_queue_page_offers_the_table_s_actions_for_the_state(operator_client, seed, state):
    seed.in_state(state)
    page = buttons_of(operator_client.get(f"/queues/default/?state={state}").content)
    assert list(page.buttons) == offered(state)
    assert all(page.buttons.values())
    assert page.bulk == state_actions_for(state)


@pytest.mark.parametrize("state", STATES)
def test_the_task_page_shows_the_table_s_actions_for_the_state(operator_client, seed, state):
    task_id = seed.in_state(state)
    page = buttons_of(operator_client.get(f"/queues/default/tasks/{task_id}/").content)
    assert list(page.buttons) == list(TASK_ACTIONS)  # every one rendered, for the live page to show or hide
    assert [name for name, shown in page.buttons.items() if shown] == offered(state)


@pytest.mark.parametrize("state", STATES)
@pytest.mark.parametrize("action", list(TASK_ACTIONS))
def test_the_console_dispatches_each_task_action_where_the_table_says(operator_client, seed, engine, action, state):
    task_id = seed.in_state(state)
    response = operator_client.post("/queues/default/batch/", {"action": action, "task_ids": [task_id]})
    said = [(m.level_tag, str(m)) for m in get_messages(response.wsgi_request)]
    if state in TASK_ACTIONS[action].states:
        assert said == [("success", f"1 task {DONE[action]}.")]
    else:
        assert [level for level, _ in said] == ["error"] and task_id in said[0][1]
        try:
            assert engine.get_task("default", task_id).state == state
        except TaskNotFoundError:
            pytest.fail(f"{action} was refused for a {state} task, which is gone")


def test_every_action_of_the_table_has_its_words_in_the_console():
    """A new action in the engine's table gets its message, form choice and workflow button, or this fails."""
    assert set(DONE) == set(TASK_ACTIONS)
    assert set(BUTTONS) == set(WORKFLOW_ACTIONS)
    assert [c for c, _ in TaskBatchForm.base_fields["action"].choices] == list(TASK_ACTIONS)
    assert [c for c, _ in StateBulkForm.base_fields["action"].choices] == list(STATE_ACTIONS)
