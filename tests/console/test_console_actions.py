"""Every operator action does what it says through the engine, reports back, and writes an audit entry."""

from __future__ import annotations

import pytest
from django.contrib.messages import get_messages
from django.urls import reverse

pytestmark = pytest.mark.django_db


def texts(response) -> list[str]:
    return [str(m) for m in get_messages(response.wsgi_request)]


def test_pause_and_resume(operator_client, seed, engine, audit):
    seed.pending()
    response = operator_client.post("/queues/default/pause/", {"next": "/queues/default/"})
    assert response.status_code == 302 and response["Location"] == "/queues/default/"
    assert engine.queue_info("default").paused
    response = operator_client.post("/queues/default/resume/")
    assert response["Location"] == "/"
    assert not engine.queue_info("default").paused
    assert [(c["user"], c["action"], c["queue"]) for c in audit] == [
        ("otto", "pause_queue", "default"),
        ("otto", "resume_queue", "default"),  # named after the Resume button, not the engine's unpause
    ]
    from taskq.queues.models import AuditLog

    assert list(AuditLog.objects.filter(username="otto", queue="default").values_list("action", flat=True)) == [
        "resume_queue",
        "pause_queue",
    ]


def test_next_must_be_local(operator_client, seed):
    seed.pending()
    response = operator_client.post("/queues/default/pause/", {"next": "https://evil.example/"})
    assert response["Location"] == "/"


def test_delete_queue_refused_while_not_empty_unless_forced(operator_client, seed, engine, audit):
    seed.pending()
    response = operator_client.post("/queues/default/delete/", {})
    assert response.status_code == 302
    assert "default" in engine.queues()
    # Said once: the engine's own "force to delete them" is not repeated beside the checkbox's hint.
    assert "Queue default was not deleted: 1 tasks left. Tick “force” to delete them too." in texts(response)
    assert audit == []
    response = operator_client.post("/queues/default/delete/", {"force": "on"})
    assert "default" not in engine.queues()
    assert audit[-1]["action"] == "delete_queue" and audit[-1]["detail"] == "forced"


def test_delete_empty_queue_without_force(operator_client, seed, engine, audit):
    task_id = seed.pending()
    engine.delete_task("default", task_id)
    operator_client.post("/queues/default/delete/", {})
    assert "default" not in engine.queues()


def test_delete_queue_refused_while_tasks_are_active(operator_client, seed, engine, audit):
    seed.active()
    response = operator_client.post("/queues/default/delete/", {"force": "on"})
    assert response.status_code == 302
    assert "default" in engine.queues()
    assert audit == []


@pytest.mark.parametrize(
    ("make", "action", "expect"),
    [
        ("archived", "run", "pending"),
        ("scheduled", "run", "pending"),
        ("pending", "archive", "archived"),
        ("retry", "archive", "archived"),
        ("archived", "delete", None),
        ("completed", "delete", None),
    ],
)
def test_batch_action_on_selected_tasks(operator_client, seed, engine, audit, make, action, expect):
    from taskq.queues.engine import TaskNotFoundError

    ids = [getattr(seed, make)() for _ in range(1 if make in ("retry", "archived", "completed") else 3)]
    here = f"/queues/default/?state={make}"
    response = operator_client.post("/queues/default/batch/", {"action": action, "task_ids": ids, "next": here})
    assert response.status_code == 302 and response["Location"] == here
    for task_id in ids:
        if expect is None:
            with pytest.raises(TaskNotFoundError):
                engine.get_task("default", task_id)
        else:
            assert engine.get_task("default", task_id).state == expect
    assert audit[-1]["task_ids"] == ids and audit[-1]["action"] == f"{action}_task"


def test_batch_reports_refused_tasks_and_does_the_rest(operator_client, seed, engine, audit):
    active, _token = seed.active()
    pending = seed.pending()
    response = operator_client.post(
        "/queues/default/batch/", {"action": "archive", "task_ids": [pending, active, "gone"]}
    )
    assert engine.get_task("default", pending).state == "archived"
    assert engine.get_task("default", active).state == "active"
    messages = " ".join(texts(response))
    assert "1 task archived" in messages and "2 tasks refused" in messages
    # Each refused task is named with why: the active one by its state, the unknown one as gone.
    assert f"task is active, it cannot be archived (1): {active}" in messages
    assert "gone since the page was read (succeeded without retention, or deleted) (1): gone" in messages
    assert audit[-1]["task_ids"] == [pending] and audit[-1]["detail"] == "2 refused"


def test_cancel_active_task(operator_client, seed, engine, audit):
    active, _token = seed.active()
    response = operator_client.post("/queues/default/batch/", {"action": "cancel", "task_ids": [active]})
    assert "asked to cancel" in " ".join(texts(response))
    assert audit[-1]["action"] == "cancel_task"


def test_deleting_from_the_task_page_goes_back_to_the_queue(operator_client, seed):
    task_id = seed.pending()
    page = reverse("taskq:task", args=["default", task_id])
    response = operator_client.post("/queues/default/batch/", {"action": "delete", "task_ids": [task_id], "next": page})
    assert response["Location"] == "/queues/default/"


def test_no_selection_changes_nothing(operator_client, seed, audit):
    seed.pending()
    response = operator_client.post("/queues/default/batch/", {"action": "delete"})
    assert response.status_code == 302
    assert "No tasks selected." in texts(response)
    assert audit == []


@pytest.mark.parametrize(
    ("make", "action", "expect"),
    [
        ("archived", "run_all", ("archived", 0, "pending", 2)),
        ("pending", "archive_all", ("pending", 0, "archived", 2)),
        ("scheduled", "delete_all", ("scheduled", 0, "pending", 0)),
    ],
)
def test_whole_state_actions(operator_client, seed, engine, audit, make, action, expect):
    for _ in range(2):
        getattr(seed, make)()
    response = operator_client.post("/queues/default/all/", {"action": action, "state": make})
    assert response.status_code == 302 and response["Location"] == f"/queues/default/?state={make}"
    counts = engine.queue_info("default").counts()
    assert (counts[expect[0]], counts[expect[2]]) == (expect[1], expect[3])
    assert audit[-1]["action"] == action and audit[-1]["detail"] == f"state={make}"
    assert audit[-1]["task_count"] == 2


def test_cancel_all(operator_client, seed, audit):
    seed.active()
    response = operator_client.post("/queues/default/all/", {"action": "cancel_all", "state": "active"})
    assert "1 active task asked to cancel." in texts(response)
    assert audit[-1]["action"] == "cancel_all"


@pytest.mark.parametrize(
    "data",
    [
        {"action": "run_all", "state": "pending"},  # pending tasks are run already
        {"action": "cancel_all", "state": "archived"},
        {"action": "explode", "state": "pending"},
        {"action": "delete_all", "state": "nowhere"},
        {},
    ],
)
def test_whole_state_actions_refuse_bad_combinations(operator_client, seed, engine, audit, data):
    seed.pending()
    assert operator_client.post("/queues/default/all/", data).status_code == 400
    assert engine.queue_info("default").pending == 1
    assert audit == []


@pytest.mark.parametrize(
    "data",
    [
        {"action": "explode", "task_ids": ["a"]},
        {"action": "delete", "task_ids": ["x" * 10_000]},
        {"action": "delete", "task_ids": [str(n) for n in range(1001)]},
    ],
)
def test_batch_refuses_bad_input(operator_client, seed, audit, data):
    seed.pending()
    assert operator_client.post("/queues/default/batch/", data).status_code == 400
    assert audit == []


def test_actions_on_unknown_queue_are_404(operator_client, engine, audit):
    for url, data in [
        ("/queues/nope/pause/", {}),
        ("/queues/nope/delete/", {}),
        ("/queues/nope/batch/", {"action": "delete", "task_ids": ["a"]}),
        ("/queues/nope/all/", {"action": "delete_all", "state": "pending"}),
    ]:
        assert operator_client.post(url, data).status_code == 404, url
    assert audit == []


def test_actions_on_a_keyspace_at_another_key_layout_are_a_503_page_and_change_nothing(
    operator_client, seed, redis_client, audit
):
    archived, pending = seed.archived(), seed.pending()
    active, _token = seed.active(queue="busy")
    redis_client.set("tq:layout", "2")  # a newer release migrated the keyspace; this console is the old one
    before = {key: redis_client.dump(key) for key in redis_client.keys("*")}
    for url, data in [
        ("/queues/default/pause/", {}),
        ("/queues/default/resume/", {}),
        ("/queues/default/delete/", {"force": "on"}),
        ("/queues/default/batch/", {"action": "run", "task_ids": [archived]}),
        ("/queues/default/batch/", {"action": "delete", "task_ids": [pending]}),
        ("/queues/busy/batch/", {"action": "cancel", "task_ids": [active]}),
        ("/queues/default/all/", {"action": "archive_all", "state": "pending"}),
        ("/queues/busy/all/", {"action": "cancel_all", "state": "active"}),
    ]:
        response = operator_client.post(url, data)
        assert response.status_code == 503, url
        page = response.content.decode()
        assert "Another key layout" in page and "nothing was changed" in page
        assert "key layout 2, but this taskq reads and writes layout 1" in page
        assert "Traceback" not in page
    assert {key: redis_client.dump(key) for key in redis_client.keys("*")} == before
    assert audit == []


def _seed_filter_case(seed, state: str) -> list[str]:
    """Two tasks of ``state`` that match ``type=email:&text=ada``, and two that do not (other type, other text)."""
    make = getattr(seed, state)
    matching = [make(task_type="email:deliver", payload={"to": f"ada{n}@example.com"}) for n in range(2)]
    make(task_type="email:deliver", payload={"to": "bob@example.com"})
    make(task_type="image:resize", payload={"to": "ada@example.com"})
    return matching


@pytest.mark.parametrize(
    ("state", "action", "moved_to"),
    [("pending", "delete_all", None), ("pending", "archive_all", "archived"), ("scheduled", "run_all", "pending")],
)
def test_bulk_bar_with_a_filter_acts_on_the_matches_only(operator_client, seed, engine, audit, state, action, moved_to):
    matching = _seed_filter_case(seed, state)
    page = operator_client.get(f"/queues/default/?state={state}&type=email:&text=ada").content.decode()
    verb = action.removesuffix("_all").capitalize()
    assert f"{verb} all 2 {state} tasks of “default” matching type email:* text “ada”?" in page
    response = operator_client.post(
        "/queues/default/all/", {"action": action, "state": state, "type": "email:", "text": "ada"}
    )
    assert response.status_code == 302
    assert response["Location"] == f"/queues/default/?state={state}&type=email%3A&text=ada"
    assert engine.queue_info("default").counts()[state] == 2  # the two that do not match are left
    for task_id in matching:
        if moved_to is None:
            assert not engine.broker.conn.exists(engine.keys.queue("default").task(task_id))
        else:
            assert engine.get_task("default", task_id).state == moved_to
    [entry] = audit
    verb = action.removesuffix("_all")
    assert entry["action"] == f"filter_{verb}" and sorted(entry["task_ids"]) == sorted(matching)
    assert entry["detail"] == f'filter state={state} type="email:" text="ada": 2 done, 0 refused'


def test_bulk_bar_with_a_filter_works_in_bounded_batches(operator_client, seed, engine, audit, monkeypatch):
    import taskq.console.views.actions
    import taskq.console.views.queues

    for module in (taskq.console.views.actions, taskq.console.views.queues):
        monkeypatch.setattr(module, "FILTER_SCAN", 3)  # the bound of one filter's read (10,000 in production)
    for n in range(5):
        seed.pending(task_type="email:deliver", payload={"n": n})
    page = operator_client.get("/queues/default/?state=pending&type=email:").content.decode()
    assert "Delete all 3 pending tasks of “default” matching type email:*?" in page and "among the first 3 of 5" in page
    data = {"action": "delete_all", "state": "pending", "type": "email:"}
    first = operator_client.post("/queues/default/all/", data)
    assert "3 matching tasks deleted." in texts(first)
    assert "The filter stopped at its bound (3 of 5 tasks read): run the action again for the rest." in texts(first)
    assert engine.queue_info("default").pending == 2
    assert (
        audit[-1]["detail"]
        == 'filter state=pending type="email:" text="": 3 done, 0 refused; the filter read 3 of 5 tasks (its bound)'
    )
    second = operator_client.post("/queues/default/all/", data)
    assert "2 matching tasks deleted." in texts(second) and engine.queue_info("default").pending == 0


@pytest.mark.parametrize(
    ("path", "data", "status"),
    [
        ("/queues/default/all/", {"action": "delete_all", "state": "pending", "type": "x" * 300}, 400),
        ("/queues/default/all/", {"action": "delete_all", "state": "pending", "text": "x" * 201}, 400),
        ("/queues/default/all/", {"action": "run_all", "state": "pending", "type": "email:"}, 400),  # not for pending
        ("/queues/nope/all/", {"action": "delete_all", "state": "pending", "type": "email:"}, 404),
    ],
)
def test_bulk_bar_with_a_filter_refuses_bad_input_and_changes_nothing(
    operator_client, seed, engine, audit, path, data, status
):
    seed.pending()
    assert operator_client.post(path, data).status_code == status
    assert engine.queue_info("default").pending == 1 and audit == []
