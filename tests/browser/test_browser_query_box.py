"""The search page's query box completes as it is typed, in a real headless Chromium (issue 27): keys, then queue
names, then payload paths; the arrow keys move through the options (the ARIA combobox: aria-expanded,
aria-activedescendant, aria-selected), Tab and Enter accept, Escape closes, and the search it wrote runs. A bad
query still gets the parser's precise error.

No assertion is about time: the tests wait (generously) for a state, never for a duration.
"""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.browser

BOX = "#search-q"
LIST = "#search-q-options"


@pytest.fixture
def tasks(seed):
    for n in range(3):
        seed.pending("email:deliver", {"to": f"user{n}@example.com", "customer": {"id": n}}, queue="emails")
    seed.pending("report:build", {"week": 47}, queue="reports")


def shown(console) -> list[str]:
    """The options the open list shows (waits for it to open)."""
    console.wait_for(lambda d: console.find(BOX).get_attribute("aria-expanded") == "true", "the list open")
    return [item.find_element("css selector", ".label").text for item in console.find_all(f"{LIST} [role=option]")]


def shows(console, labels: list[str]) -> None:
    """Wait until the open list shows ``labels``, in order (an answer to an earlier keystroke may come first)."""
    console.wait_for(lambda d: shown(console) == labels, f"the options {labels}")


def value(console) -> str:
    return str(console.find(BOX).get_attribute("value"))


def test_completing_a_search_with_the_keyboard_and_running_it(console, tasks):
    from selenium.webdriver.common.keys import Keys

    console.login("/search/")
    box = console.find(BOX)
    assert box.get_attribute("role") == "combobox" and box.get_attribute("aria-expanded") == "false"
    box.send_keys("qu")
    shows(console, ["queue:"])
    box.send_keys(Keys.TAB)  # accepts the first option; the focus stays in the box
    console.wait_for(lambda d: value(console) == "queue:", "the key accepted")
    assert console.driver.switch_to.active_element.get_attribute("id") == "search-q"
    shows(console, ["emails", "reports"])  # the queues, from Redis
    assert box.get_attribute("aria-activedescendant") is None

    box.send_keys(Keys.ARROW_DOWN, Keys.ARROW_DOWN)
    second = console.find_all(f"{LIST} [role=option]")[1]
    assert box.get_attribute("aria-activedescendant") == second.get_attribute("id") == "search-q-options-1"
    assert second.get_attribute("aria-selected") == "true"
    box.send_keys(Keys.ARROW_UP)  # back to the first
    assert box.get_attribute("aria-activedescendant") == "search-q-options-0"
    box.send_keys(Keys.ENTER)  # accepts the highlighted option: it does not submit
    console.wait_for(lambda d: value(console) == "queue:emails ", "the queue accepted, a space after it")
    assert "/search/" == console.driver.current_url.removeprefix(console.base_url).split("?")[0]
    shows(console, [f"{key}:" for key in ("queue", "type", "state", "id", "error", "fingerprint", "age",
                                           "payload.<path>")])  # fmt: skip

    box.send_keys("pay", Keys.TAB)
    console.wait_for(lambda d: value(console) == "queue:emails payload.", "payload. accepted")
    shows(console, ["payload.customer:", "payload.customer.id:", "payload.to:"])  # paths of the emails' payloads
    box.send_keys("customer.")
    shows(console, ["payload.customer.id:"])
    box.send_keys(Keys.TAB)
    console.wait_for(lambda d: value(console) == "queue:emails payload.customer.id:", "the path accepted")
    box.send_keys("1")  # a payload value is never offered: the list stays closed
    console.wait_for(lambda d: box.get_attribute("aria-expanded") == "false", "the list closed")
    box.send_keys(Keys.ENTER)  # nothing highlighted: Enter runs the search
    console.wait_text("1 match among 3", "main")
    assert value(console) == "queue:emails payload.customer.id:1"


def test_escape_closes_the_list_and_a_bad_query_gets_the_parsers_error(console, tasks):
    from selenium.webdriver.common.keys import Keys

    console.login("/search/")
    box = console.find(BOX)
    box.send_keys("state:re")
    shows(console, ["retry", "aggregating"])
    box.send_keys(Keys.ESCAPE)
    console.wait_for(lambda d: box.get_attribute("aria-expanded") == "false", "the list closed")
    assert value(console) == "state:re" and console.find(LIST).get_attribute("hidden") is not None
    box.send_keys(Keys.ESCAPE)  # the list is closed: a second Escape leaves the query as it is (it erased it)
    assert value(console) == "state:re" and console.find(LIST).get_attribute("hidden") is not None
    box.send_keys(Keys.ENTER)
    console.wait_text('unknown state "re"; states are pending, active', ".errors")
    assert '(at character 1 of the search "state:re")' in console.text(".errors")
    # A click on an option accepts it too.
    box = console.find(BOX)
    box.clear()
    box.send_keys("type:rep")
    shows(console, ["report:build"])
    console.click(f"{LIST} [role=option]")
    console.wait_for(lambda d: value(console) == "type:report:build ", "the clicked option accepted")
