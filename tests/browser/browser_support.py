"""Helpers of the browser tests: a small page driver over Selenium for the console."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.console.console_support import PASSWORD

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
WAIT = 20.0  # generous: a loaded CI box must not fail a correct test
SCREEN_WIDTH = 1280
MAX_SCREEN_HEIGHT = 2400


def seed_mails_and_an_sms(seed: Any, count: int = 12, queue: str = "emails") -> None:
    """``count`` pending ``email:deliver`` tasks (to user<n>@example.com) and one pending ``sms:send`` to the same
    kind of address: only a search or filter on the type tells them apart."""
    for n in range(count):
        seed.pending("email:deliver", {"to": f"user{n}@example.com"}, queue=queue)
    seed.pending("sms:send", {"to": "user0@example.com"}, queue=queue)


@contextmanager
def open_chromium(chromium: tuple[str, str], profile: Path) -> Iterator[Any]:
    """Headless Chromium through its driver (``chromium``: their paths), with its own profile directory, quit and
    removed at the end. Tests take it through the ``driver`` fixture, or once per module where pages are slow to
    set up (tests/live/test_live_task_page_browser.py)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    binary, driver_path = chromium
    options = webdriver.ChromeOptions()
    options.binary_location = binary
    options.unhandled_prompt_behavior = "ignore"  # a dialog the test did not expect is an error, not dismissed
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--disable-quic",
        "--disable-extensions",
        "--window-size=1280,900",
        "--force-device-scale-factor=1",
        "--hide-scrollbars",
        "--lang=en-US",
        f"--user-data-dir={profile}",
    ):
        options.add_argument(flag)
    browser = webdriver.Chrome(service=Service(executable_path=driver_path), options=options)
    browser.set_page_load_timeout(30)
    try:
        yield browser
    finally:
        browser.quit()
        shutil.rmtree(profile, ignore_errors=True)


@dataclass
class Console:
    driver: Any  # selenium.webdriver.Chrome
    base_url: str
    username: str
    screenshot_dir: Path

    # -- navigation ---------------------------------------------------------------------------------------------

    def get(self, path: str) -> None:
        self.driver.get(self.base_url + path)

    def login(self, next_path: str = "/") -> None:
        """Log in through the login form, as a person would: the console sends an anonymous visitor there."""
        from selenium.webdriver.common.by import By

        self.get(next_path)
        self.wait_for(lambda d: "/accounts/login/" in d.current_url, "the login page")
        self.driver.find_element(By.NAME, "username").send_keys(self.username)
        self.driver.find_element(By.NAME, "password").send_keys(PASSWORD)
        self.driver.find_element(By.CSS_SELECTOR, "form[action*='login'] button[type=submit]").click()
        self.wait_for(lambda d: "/accounts/login/" not in d.current_url, "the login to go through")

    def prefer(self, **fields: Any) -> None:
        """Set the user's console preferences (``rows_per_page``, ``theme``), as the settings page saves them."""
        from django.contrib.auth import get_user_model

        from taskq.console.models import ConsolePreference

        user = get_user_model().objects.get(username=self.username)
        ConsolePreference.objects.update_or_create(user=user, defaults=fields)

    # -- reading ------------------------------------------------------------------------------------------------

    def find(self, css: str) -> Any:
        from selenium.webdriver.common.by import By

        return self.wait_for(lambda d: d.find_element(By.CSS_SELECTOR, css), css)

    def find_all(self, css: str) -> list[Any]:
        from selenium.webdriver.common.by import By

        return self.driver.find_elements(By.CSS_SELECTOR, css)

    def read_fresh(self, path: str, script: str) -> Any:
        """What ``script`` returns on a fresh load of ``path``, in a tab of its own (closed after): what a live page
        is compared with."""
        driver = self.driver
        here = driver.current_window_handle
        driver.switch_to.new_window("tab")
        self.get(path)
        shown = driver.execute_script(script)
        driver.close()
        driver.switch_to.window(here)
        return shown

    def text(self, css: str = "main") -> str:
        from selenium.webdriver.common.by import By

        # Found and read in one poll: a live page may replace the element between the two (a stale element), and
        # the reading is then tried again. The tuple keeps an empty text from reading as "not yet".
        return str(self.wait_for(lambda d: (d.find_element(By.CSS_SELECTOR, css).text,), css)[0])

    def wait_for(self, condition: Any, what: str, timeout: float = WAIT) -> Any:
        from selenium.common.exceptions import WebDriverException
        from selenium.webdriver.support.ui import WebDriverWait

        # While a page is being replaced (a form was just submitted), Chromium may answer for a node of the old
        # document with a stale-element error or a generic "node does not belong to the document" one: keep polling
        # through both; a condition that never holds still ends in the timeout naming what was awaited.
        wait = WebDriverWait(self.driver, timeout, ignored_exceptions=(WebDriverException,))
        # Not the current URL in the message: reading it while a dialog is open would fail (and close the dialog).
        return wait.until(condition, message=f"waiting for {what}")

    def wait_text(self, text: str, css: str = "main") -> None:
        from selenium.webdriver.common.by import By

        self.wait_for(lambda d: text in d.find_element(By.CSS_SELECTOR, css).text, f"{text!r} in {css}")

    # -- acting -------------------------------------------------------------------------------------------------

    def click(self, css: str) -> None:
        self.find(css).click()

    def confirm(self) -> str:
        """Accept the confirmation dialog the last click opened; returns its text."""
        from selenium.webdriver.support import expected_conditions as ec

        alert = self.wait_for(ec.alert_is_present(), "a confirmation dialog")
        message = alert.text
        alert.accept()
        return message

    # -- screenshots --------------------------------------------------------------------------------------------

    def screenshot(self, name: str, width: int = SCREEN_WIDTH, settle: Callable[[], None] | None = None) -> Path:
        """The whole page (up to MAX_SCREEN_HEIGHT) at a fixed width (a phone's below 500: the page is laid out
        for that width, which reloads it; ``settle`` then waits for what the picture must show, such as the page
        going live again), as ``<screenshot_dir>/<name>.png``."""
        if width < 500:
            self.driver.execute_cdp_cmd(
                "Emulation.setDeviceMetricsOverride",
                {"width": width, "height": MAX_SCREEN_HEIGHT, "deviceScaleFactor": 1, "mobile": True},
            )
            self.driver.refresh()
            if settle:
                settle()
        height = self.driver.execute_script(
            "return Math.max(document.body.scrollHeight, document.documentElement.scrollHeight)"
        )
        metrics = {
            "width": width,
            "height": min(int(height), MAX_SCREEN_HEIGHT),
            "deviceScaleFactor": 1,
            "mobile": width < 500,
        }
        self.driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", metrics)
        try:
            self.screenshot_dir.mkdir(parents=True, exist_ok=True)
            path = self.screenshot_dir / f"{name}.png"
            assert self.driver.save_screenshot(str(path)), f"could not save {path}"
        finally:
            self.driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
        return path
