"""Product code says what it does and why; how it came to be ("issue 23: the page needed reloads") belongs in the
changelog. This scan fails on a mention of an issue number in the product's code, templates and assets, naming the
file and line."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PRODUCT = ("queues", "worker", "console", "metrics", "taskq", "templates", "static")
SUFFIXES = frozenset({".py", ".html", ".js", ".css", ".lua"})
HISTORY = re.compile(r"\bissues? #?\d+", re.IGNORECASE)


def test_product_code_names_no_issue_number():
    found = []
    for folder in PRODUCT:
        for path in sorted((ROOT / folder).rglob("*")):
            if path.suffix not in SUFFIXES or not path.is_file() or path.is_symlink():
                continue
            for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
                if HISTORY.search(line):
                    found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not found, "history belongs in docs/changelog.md:\n" + "\n".join(found)


def test_the_scan_catches_what_it_is_for():
    assert HISTORY.search("# (issue 23: the chips kept the count)") and HISTORY.search("Issue 24: a bare Client()")
    assert not HISTORY.search("an issue with the lease") and not HISTORY.search("tissue 5")
