"""Issue 23 in a real headless Chromium over daphne: the workflow page follows its workflow to the end without a
reload (it read "running" and "Members left 2 of 5" until reloaded), and the aggregating tab's group chips drop
once the group is cut and combined (they kept "user:42 · 2" while the count read 0). No assertion is about time."""

from __future__ import annotations

import pytest
from daphne_console import USER, daphne_console
from live_support import WAIT

from taskq.queues.engine import AggregatorRegistry, aggregator, chain, sig
from taskq.queues.engine.aggregation import GroupSettings, GroupStore
from tests.browser.browser_support import Console
from tests.ports import free_port

pytestmark = [pytest.mark.browser, pytest.mark.timeout(180)]


@pytest.fixture
def console_url(tmp_path, live_engine, redis_url):
    """The console under daphne on a port of this suite's range (8190-8199)."""
    with daphne_console(tmp_path, redis_url, port=free_port(range(8190, 8200))) as console:
        yield console.url


def _live(console: Console) -> None:
    console.wait_for(lambda d: d.execute_script("return window.taskqLive.status") == "live", "live", WAIT)
    console.driver.execute_script("window.notReloaded = true")  # gone if the page reloads


def test_workflow_page_follows_it_to_the_end_and_group_chips_drop_after_the_cut(console_url, driver, moves, tmp_path):
    moves.client.submit(chain(sig("fetch"), sig("store")), queue="web", workflow_id="wf-live")
    console = Console(driver, console_url, USER, tmp_path)
    console.login("/queues/web/workflows/wf-live/")
    _live(console)
    assert console.text("[data-workflow-progress]") == "0 of 2 done"
    for _step in range(2):  # each step runs and succeeds as a worker would record it
        moves.complete("web", moves.start("web"))
    console.wait_text("succeeded", "[data-workflow-state]")
    assert console.text("[data-workflow-progress]") == "2 of 2 done"
    assert console.text("[data-workflow-left]") == "none"
    assert driver.execute_script("return window.notReloaded") is True

    for n in range(2):
        moves.client.enqueue("email:line", {"line": n}, group="user:42", queue="web")
    console.get("/queues/web/?state=aggregating")
    _live(console)
    assert console.text("[data-live-groups]") == "Groups: user:42 · 2"
    assert console.text("[data-live-figure=memory]") != "0 bytes"  # the aggregating tasks take memory

    combiners = AggregatorRegistry()
    aggregator("email:line", registry=combiners)(lambda group, tasks: ("email:digest", {"lines": len(tasks)}))
    store = GroupStore(moves.broker, combiners)
    set_id, taken = store.cut("web", "user:42", GroupSettings(max_size=2))
    assert taken == 2
    store.finish("web", "user:42", set_id, store.combine("web", "user:42", set_id))
    console.wait_text("No groups.", "[data-live-groups]")
    console.wait_text("0", "[data-live-count=aggregating]")
    assert driver.execute_script("return window.notReloaded") is True
