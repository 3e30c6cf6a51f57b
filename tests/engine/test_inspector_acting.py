"""``Inspector.acting_as``: views of one inspector used from many threads at once (as the console's requests use
the process's inspector) each record their own actor, and share one broker."""

from __future__ import annotations

import threading

from taskq.queues.engine import Client, Inspector


def test_views_acting_at_once_from_many_threads_each_record_their_own_actor(r, redis_url, clock):
    with Client(redis_url, clock=clock) as client:
        ids = [client.enqueue("email:deliver", {"n": n}, queue="default").id for n in range(8)]
    with Inspector(redis_url, clock=clock, actor="operator") as shared:
        start = threading.Barrier(len(ids))
        errors: list[BaseException] = []

        def act(n: int) -> None:
            view = shared.acting_as(f"op{n}")
            start.wait()
            try:
                view.archive_task("default", ids[n])
                view.run_task("default", ids[n])
            except BaseException as exc:  # reported below, with the thread's actor
                errors.append(exc)

        threads = [threading.Thread(target=act, args=(n,)) for n in range(len(ids))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert errors == []
        for n, task_id in enumerate(ids):
            moves = [(e.from_state, e.to_state, e.worker) for e in shared.task_events("default", task_id)[1:]]
            assert moves == [("pending", "archived", f"op{n}"), ("archived", "pending", f"op{n}")]
        assert shared.actor == "operator"
