"""Fixtures of the mounted-console tests: the browser of tests/browser (Debian's Chromium through Selenium)."""

from __future__ import annotations

import sys
from pathlib import Path

# tests/browser's conftest imports its helpers by bare name.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "browser"))
from tests.browser.conftest import chromium  # noqa: F401
