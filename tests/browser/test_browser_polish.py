"""Issue 16's rough edges, in a real headless Chromium: each confirmation names its action, and the bulk bar
under an active filter acts on the matches, paged like a tab."""

from __future__ import annotations

import pytest
from browser_support import seed_mails_and_an_sms

pytestmark = pytest.mark.browser


def test_deleting_from_the_task_page_asks_with_the_word_delete(console, engine, seed):
    task_id = seed.archived(queue="emails", error="bounced")
    console.login(f"/queues/emails/tasks/{task_id}/")
    console.click("button[name=action][value=delete]")
    assert console.confirm() == f"Delete task {task_id}? It cannot be undone."
    console.wait_text("1 task deleted", ".messages")
    assert engine.queue_info("emails").archived == 0


def test_filtered_bulk_delete_confirms_the_count_of_matches_and_deletes_only_them(console, engine, seed):
    console.prefer(rows_per_page=10)
    seed_mails_and_an_sms(seed)
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


def _rgb(css: str) -> tuple[float, ...]:
    """``rgb(1, 2, 3)`` / ``rgba(1, 2, 3, 0.5)`` as numbers."""
    return tuple(float(part) for part in css[css.index("(") + 1 : -1].split(","))


def _contrast(foreground: tuple[float, ...], background: tuple[float, ...]) -> float:
    """WCAG 2's contrast ratio of two opaque sRGB colours."""

    def luminance(rgb: tuple[float, ...]) -> float:
        linear = [c / 255 / 12.92 if c / 255 <= 0.03928 else ((c / 255 + 0.055) / 1.055) ** 2.4 for c in rgb[:3]]
        return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]

    light, dark = sorted((luminance(foreground), luminance(background)), reverse=True)
    return (light + 0.05) / (dark + 0.05)


def test_rq_current_tabs_count_is_readable(console, redis_url, settings):
    import django_rq

    settings.RQ_QUEUES = {"default": {"URL": redis_url}}
    django_rq.get_queue("default").enqueue("tests.rq.rq_jobs.add", 1, 2)
    console.login("/rq/default/")
    count = console.find(".rq .tabs a.current .count")
    # The colour it is drawn in, and the first opaque background under it (its own, or its tab's).
    colour, background, opacity = console.driver.execute_script(
        """
        var el = arguments[0], style = getComputedStyle(el), opacity = 1, node = el;
        for (; node; node = node.parentElement) { opacity *= parseFloat(getComputedStyle(node).opacity); }
        for (node = el; node; node = node.parentElement) {
          var bg = getComputedStyle(node).backgroundColor;
          if (bg !== 'rgba(0, 0, 0, 0)' && bg !== 'transparent') { return [style.color, bg, opacity]; }
        }
        return [style.color, 'rgb(255, 255, 255)', opacity];
        """,
        count,
    )
    assert opacity == 1
    assert _contrast(_rgb(colour), _rgb(background)) >= 4.5, (colour, background)


def test_schedulers_history_stays_inside_its_card(console, redis_url):
    from tests.scheduler.scheduler_support import fire_some

    fire_some(redis_url)
    console.login("/schedulers/")
    console.click("table.schedulers details summary")
    inner = console.find("table.schedulers details table.inner")
    card = console.find("section.card:has(table.schedulers)")
    inner_right, card_right, overflow = console.driver.execute_script(
        "var card = arguments[1];"
        "return [arguments[0].getBoundingClientRect().right, card.getBoundingClientRect().right,"
        " card.scrollWidth - card.clientWidth];",
        inner,
        card,
    )
    assert inner_right <= card_right and overflow == 0, (inner_right, card_right, overflow)
