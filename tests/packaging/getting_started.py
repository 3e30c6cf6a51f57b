"""The three blocks of docs/getting-started.md, "Add taskq to your project", as a project adds them: read from the
page itself, so the wheel's test (test_wheel_in_a_project.py) and the demo's check (tests/test_getting_started.py)
follow what the page says, not a copy of it."""

from __future__ import annotations

import re
from pathlib import Path

PAGE = Path(__file__).resolve().parents[2] / "docs" / "getting-started.md"
SECTION = "## Add taskq to your project"


def block(file: str) -> str:
    """The code of the section's block for ``mysite/<file>`` (its first line, the comment naming it, left out)."""
    text = PAGE.read_text()
    section = text[text.index(SECTION) :]
    section = section[: section.index("\n## ", len(SECTION))]
    for found in re.finditer(r"```python\n(.*?)```", section, re.S):
        first, _, code = found.group(1).partition("\n")
        if first == f"# mysite/{file}":
            return code
    raise LookupError(f"{PAGE.name} has no block for mysite/{file} under {SECTION!r}")


def for_project(file: str, project: str) -> str:
    """The block as it reads in a project named ``project`` (the page's is ``mysite``)."""
    return block(file).replace("mysite.", f"{project}.")
