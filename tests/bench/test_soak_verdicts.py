"""The soak's verdicts judge what they say (bench/soak.py, bench/soak_pages.py): a smoke run of seconds cannot show
that a grown measure, an unprovoked error or a stale page fails the soak, so each rule is checked here on figures,
log lines and messages made for it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.soak import check_logs, growth, memory_verdict
from bench.soak_pages import Page, View, compare, key, subscriptions
from bench.soak_tasks import PROVOKED


def rows(values: list[float], column: str = "worker_rss", step: float = 10.0) -> list[dict[str, Any]]:
    return [{"t_s": i * step, column: value} for i, value in enumerate(values)]


def test_growth_compares_the_last_tenth_with_the_first_after_the_warmup() -> None:
    # The warm-up's climb (the first 3 samples) is left out; then 20 samples: 2 per tenth.
    flat = [50.0, 80.0, 99.0] + [100.0] * 18 + [105.0, 109.0]
    verdict = growth(rows(flat), warmup=30.0, end=10_000.0, limit=0.10)
    assert verdict["tenth"] == 2
    assert verdict["measures"]["worker_rss"] == {"first": 100.0, "last": 107.0, "growth": 0.07, "ok": True}
    grown = [100.0] * 18 + [111.0, 112.0]
    verdict = growth(rows(grown), warmup=0.0, end=10_000.0, limit=0.10)
    assert verdict["measures"]["worker_rss"]["growth"] == 0.115
    assert not verdict["measures"]["worker_rss"]["ok"] and not verdict["ok"]


def test_growth_leaves_out_the_samples_after_the_traffic_and_fails_without_samples() -> None:
    climbing_after_the_end = [100.0] * 20 + [500.0] * 5
    verdict = growth(rows(climbing_after_the_end), warmup=0.0, end=200.0, limit=0.10)
    assert verdict["measures"]["worker_rss"]["ok"]
    verdict = growth(rows([100.0]), warmup=0.0, end=200.0, limit=0.10)
    assert not verdict["measures"]["worker_rss"]["ok"] and "samples" in verdict["measures"]["worker_rss"]["why"]


def test_a_measure_from_zero_that_grows_fails() -> None:
    verdict = growth(rows([0.0] * 10 + [1.0] * 10, "worker_fds"), warmup=0.0, end=10_000.0, limit=0.10)
    assert not verdict["measures"]["worker_fds"]["ok"]


def test_redis_memory_must_come_back_within_the_tolerance() -> None:
    before = {"used_memory_less_streams": 1000}
    assert memory_verdict(before, {"used_memory_less_streams": 1100}, 0.10)["ok"]
    assert not memory_verdict(before, {"used_memory_less_streams": 1101}, 0.10)["ok"]


def test_only_the_provoked_failures_are_set_apart_in_the_logs(tmp_path: Path) -> None:
    (tmp_path / "worker.log").write_text(
        f"2026-11-29 05:36:51,598 INFO taskq.worker.processor: task 1 (soak:flaky) failed: RuntimeError: {PROVOKED}\n"
        "2026-11-29 05:36:52,000 INFO taskq.worker: all well\n"
    )
    (tmp_path / "redis.log").write_text(
        "1:M 29 Nov 2026 05:36:00.000 # WARNING Memory overcommit must be enabled!\n"
        "1:M 29 Nov 2026 05:36:00.001 * Ready to accept connections tcp\n"
        "1:M 29 Nov 2026 06:10:00.000 # User requested shutdown...\n"
    )
    verdict = check_logs(tmp_path)
    assert verdict == {"provoked": 1, "unprovoked": {}, "ok": True}
    (tmp_path / "console.log").write_text("2026-11-29 05:40:00,000 ERROR django.request: Internal Server Error\n")
    with (tmp_path / "redis.log").open("a") as log:
        log.write("1:M 29 Nov 2026 06:20:00.000 # after our own shutdown: not judged\n")
    verdict = check_logs(tmp_path)
    assert not verdict["ok"] and list(verdict["unprovoked"]) == ["console"]
    (tmp_path / "redis.log").write_text(
        "1:M 29 Nov 2026 05:36:00.001 * Ready to accept connections tcp\n"
        "1:M 29 Nov 2026 05:50:00.000 # Client id=7 closed for overcoming of output buffer limits.\n"
    )
    assert list(check_logs(tmp_path)["unprovoked"]) == ["console", "redis"]


def queue_update(queue: str, pending: int) -> dict[str, Any]:
    return {"kind": "update", "scope": "queue", "queues": {queue: {"pending": pending}}, "tasks": []}


def test_a_page_that_missed_a_message_differs_from_a_fresh_load() -> None:
    subscription = subscriptions(1, ["soak-one"])[0]
    live, fresh = Page(subscription), View()
    for view in (live.view, fresh):
        view.apply(queue_update("soak-one", 3))
        view.apply({"kind": "tab", "queue": "soak-one", "ids": ["a"], "rows": "<tr>a</tr>"})
    assert compare([live.view.parts], [live], {key(subscription): fresh.parts})["equal"] == 1
    fresh.apply(queue_update("soak-one", 0))  # what the live page did not get
    fresh.apply({"kind": "tab", "queue": "soak-one", "ids": [], "rows": ""})
    result = compare([live.view.parts], [live], {key(subscription): fresh.parts})
    assert result["equal"] == 0 and result["differing"][0]["parts"] == ["counts", "tab"]


def test_a_dashboard_view_merges_rows_and_drops_the_queues_no_longer_listed() -> None:
    view = View()
    view.apply({"kind": "dashboard", "listed": ["a", "b"], "chart": "<svg/>", "rows": [{"queue": "a"}, {"queue": "b"}]})
    view.apply({"kind": "dashboard", "listed": ["b"], "rows": [{"queue": "b", "cells": {"size": [1, "1"]}}]})
    assert view.parts == {"rows": {"b": {"queue": "b", "cells": {"size": [1, "1"]}}}, "chart": "<svg/>"}
    view.apply({"kind": "servers", "servers": [{"id": "s1", "status": "active", "usage": {"rss": 1}, "running": []}]})
    assert "usage" not in view.parts["servers"][0]


def test_the_page_mix() -> None:
    pages = subscriptions(20, ["q1", "q2"])
    scopes = [page["scope"] for page in pages]
    assert scopes.count("queue") == 10 and scopes.count("dashboard") == 6
    assert scopes.count("servers") == 2 and scopes.count("summary") == 2
    assert {page["tab"]["state"] for page in pages if "tab" in page} == {
        "pending",
        "completed",
        "scheduled",
        "retry",
        "archived",
    }
    assert all(page.get("summary") is True for page in pages if page["scope"] != "summary")
