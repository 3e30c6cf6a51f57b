"""The dashboard's templates for rows of queues that appear while it is open (live.js fills them in): the same
row as a rendered queue's, with actions only for operators and never in read-only mode."""

from __future__ import annotations

import re


def new_row_templates(page: str) -> dict[str, str]:
    return dict(re.findall(r'<template data-live-new-row="(\w+)"[^>]*>(.*?)</template>', page, re.S))


def test_operator_gets_pause_and_resume_rows_under_the_placeholder_queue(operator_client, seed):
    seed.pending(queue="emails")
    page = operator_client.get("/").content.decode()
    rows = new_row_templates(page)
    assert set(rows) == {"run", "paused"}
    assert 'action="/queues/taskq-new-queue/pause/"' in rows["run"] and "/resume/" not in rows["run"]
    assert 'action="/queues/taskq-new-queue/resume/"' in rows["paused"]
    assert all('action="/queues/taskq-new-queue/delete/"' in row for row in rows.values())
    rendered = re.search(r'<tr data-live-for="emails">.*?</tr>', page, re.S).group(0)
    assert rendered.count("data-live-cell=") == rows["run"].count("data-live-cell=") == 7


def test_viewer_and_read_only_rows_have_no_actions(viewer_client, operator_client, seed, settings):
    seed.pending(queue="emails")
    assert all("<form" not in row for row in new_row_templates(viewer_client.get("/").content.decode()).values())
    settings.TASKS_CONSOLE_READ_ONLY = True
    rows = new_row_templates(operator_client.get("/").content.decode())
    assert rows and all("<form" not in row for row in rows.values())


def test_an_empty_dashboard_still_has_the_table_for_live_rows(viewer_client, engine):
    page = viewer_client.get("/").content.decode()
    assert 'id="queues-table" data-live-filled hidden' in page and "No queues yet." in page


def test_a_rows_action_urls_are_its_queue_page_and_the_action(operator_client, seed):
    """The rows build their actions' URLs from the queue page's (one reverse per row, not three): they must be the
    URLs Django would reverse, for a name that needs escaping too."""
    from django.urls import reverse

    name = "mail/out bound~"
    seed.archived(queue=name)  # first: seeding it takes the queue's only pending task
    seed.pending(queue=name)
    page = operator_client.get("/").content.decode()
    row = re.search(r'<tr data-live-for="mail/out bound~">.*?</tr>', page, re.S).group(0)
    assert f'href="{reverse("taskq:queue", args=[name])}"' in row
    for action in ("queue-pause", "queue-delete"):
        assert f'action="{reverse(f"taskq:{action}", args=[name])}"' in row
    # The figures, each with its sort value for the sortable table.
    assert re.search(r'data-value="2" data-live-cell="size" data-live-count="size">2</td>', row)
    assert re.search(r'data-value="100.0" data-live-cell="error_rate">100.00 %</td>', row)
