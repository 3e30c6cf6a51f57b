"""The architecture page's table (docs/architecture.md) is the map a newcomer reads first: it must name every
Python package of the product, one row each, and every file it names must exist (a rename that forgets the page
fails here)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ROOTS = ("taskq", "queues", "worker", "console", "metrics", "demo")
# Django's own places inside each app: described once above the table, not row by row.
DJANGO_PLACES = {"migrations", "management", "commands"}


def architecture_rows() -> dict[str, str]:
    """First-column folder of each row of the architecture page's tables -> the rest of the row. The tables come
    before the page's first section (the walk of one task through the code), which names files in prose only."""
    text = (ROOT / "docs" / "architecture.md").read_text()
    section = text.split("\n## ", 1)[0]
    rows: dict[str, str] = {}
    for line in section.splitlines():
        match = re.match(r"\| ((?:`[^`]+/`(?:, )?)+) \| (.*) \|$", line)
        if match:
            for folder in re.findall(r"`([^`]+/)`", match.group(1)):
                rows[folder] = match.group(2)
    return rows


def product_packages() -> set[str]:
    found = set()
    for root in ROOTS:
        for init in (ROOT / root).rglob("__init__.py"):
            folder = init.parent.relative_to(ROOT)
            if not DJANGO_PLACES & set(folder.parts):
                found.add(folder.as_posix() + "/")
    return found


def test_every_package_has_a_row():
    missing = product_packages() - set(architecture_rows())
    assert not missing, f"packages missing from docs/architecture.md's table: {sorted(missing)}"


def test_every_folder_and_file_a_row_names_exists():
    stale = []
    for folder, description in architecture_rows().items():
        if not (ROOT / folder).is_dir():
            stale.append(folder)
        for name in re.findall(r"`([\w./-]+\.(?:py|lua|sh)|[\w-]+/)`", description):
            if not (ROOT / folder / name).exists():
                stale.append(folder + name)
    assert not stale, f"docs/architecture.md's table names what does not exist: {stale}"


def test_the_table_is_read_at_all():
    # Guards the two tests above against a page reshaped so that the parser finds nothing to compare.
    rows = architecture_rows()
    assert {"queues/engine/", "worker/", "console/", "tests/"} <= set(rows)
