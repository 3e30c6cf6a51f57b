"""The Inspector's shape: a facade over parts, not a diamond of inheritance. Every public method it had when it was
one class of eight bases is still there, each part reaches Redis only through the broker, and a view acting for
another actor shares the broker and the parts."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

import taskq
from taskq.queues.engine import inspector as inspector_module
from taskq.queues.engine.broker import Broker
from taskq.queues.engine.errors import ValidationError
from taskq.queues.engine.inspection import (
    groups_workflows,
    queue_history,
    queue_stats,
    server_ops,
    task_actions,
    task_reads,
    task_search,
)
from taskq.queues.engine.inspector import Inspector

#: Every public method and property of the Inspector before it was split into parts.
PUBLIC = """
    acknowledgement api_served_queues archive_all archive_limits archive_task archive_workflow cancel_all cancel_task
    cancel_workflow close control_server control_servers delete_all delete_queue delete_task edit_task
    ended_server ended_servers error_groups existing_tasks export_status fleet_summary get_task groups histories
    history list_tasks list_tasks_after outstanding pause_queue payload_sample queue_definition queue_info queue_infos
    queues redis_info retry_workflow run_all run_task search search_tasks series server servers task_events
    task_record type_counts type_counts_of unpause_queue wait_for_acknowledgement workflow workflow_summaries workflows
""".split()
#: And every name ``taskq.queues.engine.inspector`` exported.
EXPORTED = """
    ACK_POLL API_SERVED_WINDOW ARCHIVABLE count_unlisted DailyStats DELETABLE EVENT_SCAN_LIMIT GroupInfo INFO_REFUSED
    Inspector LAYOUT_RECHECK MAX_PAGE_SIZE MEMORY_GROUPS MEMORY_SAMPLE page_count QueueInfo RUNNABLE SCAN_LIMIT
    SearchPage SearchResult server_info server_record ServerInfo TaskEvent WAITING_ON_LISTED
""".split()
PART_MODULES = (groups_workflows, queue_history, queue_stats, server_ops, task_actions, task_reads, task_search)


def taskq_class(cls: type) -> bool:
    return cls.__module__.startswith("taskq.")


def test_no_class_of_the_inspector_has_more_than_one_taskq_base():
    for cls in Inspector.__mro__:
        bases = [base for base in cls.__bases__ if taskq_class(base)]
        assert len(bases) <= 1, f"{cls.__name__} inherits from {[b.__name__ for b in bases]}"


def test_no_part_inherits_from_another_class_of_taskq():
    parts = [
        cls
        for module in PART_MODULES
        for _, cls in inspect.getmembers(module, inspect.isclass)
        if cls.__module__ == module.__name__ and "core" in inspect.signature(cls).parameters
    ]
    assert len(parts) == 8, [p.__name__ for p in parts]
    for part in parts:
        assert part.__bases__ == (object,), f"{part.__name__} inherits from {part.__bases__}"


def test_every_public_method_and_name_of_the_old_inspector_is_still_there():
    missing = [name for name in PUBLIC if not hasattr(Inspector, name)]
    assert missing == []
    assert [name for name in EXPORTED if not hasattr(inspector_module, name)] == []
    # Explicit forwarding, not attribute magic: each is a method (or property) of the class itself.
    assert "__getattr__" not in vars(Inspector)
    assert all(name in vars(Inspector) or name == "close" for name in PUBLIC)


def test_every_method_of_the_facade_is_its_part_method_bound_to_the_part(redis_url):
    with Inspector(redis_url) as insp:
        for name in PUBLIC:
            assert callable(getattr(insp, name))
        # Read from the class, a method is still called with the inspector first, as a method of the class would.
        assert Inspector.queues(insp) == insp.queues() == []
        assert Inspector.queue_info.__doc__ == insp._queue_reads.queue_info.__doc__


def test_the_parts_reach_redis_only_through_the_broker():
    folder = Path(taskq.__file__).parent / "queues" / "engine" / "inspection"
    for path in sorted(folder.glob("*.py")):
        text = path.read_text()
        for banned in ("import redis", "self.conn", ".pipeline(", "_redis(", "run_command"):
            assert banned not in text, f"{path.name} has {banned!r}"


def test_a_view_acting_for_another_actor_shares_the_broker_and_the_parts(redis_url):
    with Inspector(redis_url, actor="operator") as shared:
        view = shared.acting_as("console:ada")
        assert (view.actor, shared.actor) == ("console:ada", "operator")
        assert view.broker is shared.broker and view.policies is shared.policies
        assert all(getattr(view, name) is getattr(shared, name) for name in vars(shared) if name.startswith("_"))


def test_an_inspector_over_a_broker_the_caller_has(redis_url):
    broker = Broker(redis_url)
    try:
        assert Inspector(broker=broker).broker is broker
        with pytest.raises(ValidationError, match="not both"):
            Inspector(redis_url, broker=broker)
        with pytest.raises(ValidationError, match="not both"):
            Inspector(broker=broker, prefix="other")
    finally:
        broker.close()


@pytest.mark.parametrize("key_format", ["taskq", "asynq"])
def test_each_format_gives_every_method_of_each_part_with_its_signature(key_format: str) -> None:
    """The facade finds each method on its part by name: every part of asynq's format has each public method of
    the taskq part it stands in for, taking the same arguments (asynq's actions may add keyword-only ones), or
    refuses it whatever it is given (``FormatUnsupportedError``)."""
    parts = inspector_module.ASYNQ_PARTS if key_format == "asynq" else inspector_module.TASKQ_PARTS
    for field, taskq_part in zip(parts._fields, inspector_module.TASKQ_PARTS, strict=True):
        part = getattr(parts, field)
        for name, method in vars(taskq_part).items():
            if name.startswith("_") or not callable(method):
                continue
            theirs = inspect.signature(getattr(part, name)).parameters
            kinds = {param.kind for param in theirs.values()}
            if {inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD} <= kinds:
                continue  # a refusal of what the format cannot hold: it takes anything, and refuses it
            for param in inspect.signature(method).parameters.values():
                assert param.name in theirs or param.kind is param.VAR_KEYWORD, f"{part.__name__}.{name}: {param}"
                assert theirs[param.name].kind == param.kind, f"{part.__name__}.{name}: {param.name}"
