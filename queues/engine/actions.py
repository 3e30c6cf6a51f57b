"""The operator's actions on tasks and workflows, in one table: each action's name, the states of a task where it
applies, and the ``Inspector`` method that does it.

The console's forms, buttons and dispatch, the admin's task actions and the CLI's bulk commands read this table;
the inspector's bulk actions check a state against it before they run a script. The states of each task action are
those its Lua script takes (``lua/run_task.lua``, ``lua/archive_task.lua``, ``lua/delete_task.lua``: the table of
structures each passes to ``locate``), and ``tests/engine/test_action_table.py`` runs every action in every state
against Redis, so the table and a script cannot disagree. Methods are named, not referenced: the engine's lower
floors cannot import the Inspector, which sits on top of them; the console resolves every name once, on import.

No I/O. Deliberately shares its name with ``console/views/actions.py``, the console's views that do these actions
(console views are named after what they serve): this is the table, that its dispatch.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TypeVar


@dataclass(frozen=True)
class Action:
    """One operator action. ``name`` is the console's and the audit log's word for it; ``method`` the Inspector's
    method that does it; ``states`` the task states where it applies (for a state action: the states it can be
    given)."""

    name: str
    method: str
    states: frozenset[str]

    def applies_to(self, state: str) -> bool:
        return state in self.states


@dataclass(frozen=True)
class StateAction(Action):
    """An action on every task of a state. ``takes_state``: whether the method is given the state
    (``run_all(queue, state)``) or only the queue, the state being the one it acts on (``cancel_all(queue)``)."""

    takes_state: bool = True


A = TypeVar("A", bound=Action)


def _table(*actions: A) -> Mapping[str, A]:
    """The actions by name, read-only (a caller cannot change what the console and the engine both read)."""
    return MappingProxyType({action.name: action for action in actions})


#: The states each bulk action takes. Active tasks are cancelled, not deleted, run or archived; waiting tasks are
#: deleted or run one by one (``delete_task``, ``run_task``): a bulk script walks a state's list or sorted set,
#: and the waiting tasks are registered in their dependencies' sets too.
DELETABLE = frozenset({"pending", "scheduled", "retry", "archived", "completed"})
RUNNABLE = frozenset({"scheduled", "retry", "archived"})
ARCHIVABLE = frozenset({"pending", "scheduled", "retry"})
#: The one state a cancellation applies to: a cancellation is a request to the worker running the task.
CANCELLABLE = frozenset({"active"})

#: Actions on one task, by the console's name: ``method(queue, task_id)``. None applies to an aggregating task
#: (it is part of a group's batch until the batch is enqueued).
TASK_ACTIONS: Mapping[str, Action] = _table(
    Action("run", "run_task", RUNNABLE | {"waiting"}),
    Action("archive", "archive_task", ARCHIVABLE),
    Action("delete", "delete_task", DELETABLE | {"waiting"}),
    Action("cancel", "cancel_task", CANCELLABLE),
)

#: Actions on every task of a state, by the console's name: ``method(queue, state)``, or ``method(queue)`` where
#: ``takes_state`` is off. A state outside ``states`` is refused with ValidationError, changing nothing.
STATE_ACTIONS: Mapping[str, StateAction] = _table(
    StateAction("run_all", "run_all", RUNNABLE),
    StateAction("archive_all", "archive_all", ARCHIVABLE),
    StateAction("delete_all", "delete_all", DELETABLE),
    StateAction("cancel_all", "cancel_all", CANCELLABLE, takes_state=False),
)

#: Actions on a workflow, by the console's name: ``method(queue, workflow_id)``, each one script
#: (``lua/workflow_<name>.lua``). Whether one applies depends on the workflow, not on a task's state
#: (``WorkflowInfo.actions``), so ``states`` is empty.
WORKFLOW_ACTIONS: Mapping[str, Action] = _table(
    Action("retry", "retry_workflow", frozenset()),
    Action("cancel", "cancel_workflow", frozenset()),
    Action("archive", "archive_workflow", frozenset()),
)


def task_actions_for(state: str) -> list[str]:
    """The names of the task actions that apply to a task in ``state``, in the table's order."""
    return [name for name, action in TASK_ACTIONS.items() if action.applies_to(state)]


def state_actions_for(state: str) -> list[str]:
    """The names of the state actions that apply to the tasks of ``state``, in the table's order."""
    return [name for name, action in STATE_ACTIONS.items() if action.applies_to(state)]
