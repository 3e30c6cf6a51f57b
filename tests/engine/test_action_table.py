"""The engine's one table of operator actions (``taskq.queues.engine.actions``) against what does them: every
method it names exists on ``Inspector`` with the arguments the console gives it, and every action, tried on a task
in every state against Redis, is accepted exactly in the states the table lists and refused elsewhere with its
named error, changing nothing. So a Lua precondition and the table cannot disagree, and renaming an Inspector
method fails here instead of in an operator's click."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import redis

from taskq.queues.engine import FailedPreconditionError, Inspector, TaskNotFoundError, ValidationError
from taskq.queues.engine.actions import (
    ARCHIVABLE,
    DELETABLE,
    RUNNABLE,
    STATE_ACTIONS,
    TASK_ACTIONS,
    WORKFLOW_ACTIONS,
    Action,
)
from taskq.queues.engine.inspection import task_actions
from tests.cli.helpers import Seed
from tests.engine.dbstate import dump

#: Every state a task can be in.
STATES = ("pending", "active", "scheduled", "retry", "archived", "completed", "aggregating", "waiting")


@pytest.fixture(params=STATES)
def seeded(request, r: redis.Redis, redis_url: str) -> Iterator[tuple[Inspector, str, str, dict[str, Any]]]:
    """(an inspector, a state, the id of the one task put in that state, Redis's keys and values then)."""
    seeder = Seed(redis_url)
    with Inspector(redis_url, actor="test") as insp:
        state = request.param
        task_id = seeder.in_state(state)
        assert _state_of(insp, task_id) == state
        yield insp, state, task_id, dump(r)
    seeder.client.close()
    seeder.broker.close()


def _params(method: Callable[..., object]) -> list[str]:
    """The names of a method's parameters that have no default (``self`` aside)."""
    return [
        p.name
        for p in inspect.signature(method).parameters.values()
        if p.name != "self" and p.default is inspect.Parameter.empty and p.kind is not p.VAR_KEYWORD
    ]


#: Every action of the table, with the arguments the console gives its method after ``self``.
SIGNATURES = (
    [(action, ["queue", "task_id"]) for action in TASK_ACTIONS.values()]
    + [(action, ["queue", "state"] if action.takes_state else ["queue"]) for action in STATE_ACTIONS.values()]
    + [(action, ["queue", "workflow_id"]) for action in WORKFLOW_ACTIONS.values()]
)


@pytest.mark.parametrize(("action", "arguments"), SIGNATURES, ids=lambda v: v.method if isinstance(v, Action) else "")
def test_every_action_names_an_inspector_method_taking_what_the_console_gives(action: Action, arguments: list[str]):
    method = getattr(Inspector, action.method, None)
    assert callable(method), f"{action.name}: Inspector has no method {action.method}"
    assert _params(method) == arguments, f"{action.name}: Inspector.{action.method}{inspect.signature(method)}"


def test_the_bulk_state_sets_are_the_tables() -> None:
    """The inspector's bulk actions check a state against the table's sets, not copies of them."""
    assert (task_actions.DELETABLE, task_actions.RUNNABLE, task_actions.ARCHIVABLE) == (DELETABLE, RUNNABLE, ARCHIVABLE)
    assert STATE_ACTIONS["delete_all"].states is DELETABLE and STATE_ACTIONS["run_all"].states is RUNNABLE


def test_every_state_is_in_the_table_s_world() -> None:
    """A state the table lists is a state a task can be in (a misspelt one would be offered nowhere)."""
    for table in (TASK_ACTIONS, STATE_ACTIONS):
        for action in table.values():
            assert action.states and action.states <= set(STATES), action


def _state_of(insp: Inspector, task_id: str) -> str:
    try:
        return insp.get_task("default", task_id).state
    except TaskNotFoundError:
        return "gone"


@pytest.mark.parametrize("name", list(TASK_ACTIONS))
def test_a_task_action_is_accepted_exactly_in_the_table_s_states(seeded, r: redis.Redis, name: str):
    insp, state, task_id, before = seeded
    action = TASK_ACTIONS[name]
    if action.applies_to(state):
        getattr(insp, action.method)("default", task_id)
        if name != "cancel":  # a cancellation is a request to the worker, not a transition
            assert _state_of(insp, task_id) != state, f"{name} accepted a {state} task but left it {state}"
    else:
        with pytest.raises(FailedPreconditionError):
            getattr(insp, action.method)("default", task_id)
        assert dump(r) == before, f"{name} refused a {state} task but changed Redis"


@pytest.mark.parametrize("name", list(STATE_ACTIONS))
def test_a_state_action_is_accepted_exactly_in_the_table_s_states(seeded, r: redis.Redis, name: str):
    insp, state, task_id, before = seeded
    action = STATE_ACTIONS[name]
    method = getattr(insp, action.method)
    if not action.takes_state:  # it acts on its one state: any other state's task is not counted
        assert method("default") == (1 if action.applies_to(state) else 0)
        assert dump(r) == before and _state_of(insp, task_id) == state
    elif action.applies_to(state):
        assert method("default", state) == 1
        assert _state_of(insp, task_id) != state, f"{name} counted the {state} task but left it {state}"
    else:
        with pytest.raises(ValidationError, match=f"{name} takes a state among"):
            method("default", state)
        assert dump(r) == before, f"{name} refused {state} but changed Redis"
