"""The documentation site builds as `make docs` builds it, and its checks catch what they exist to catch.

The site is built with ``sphinx-build -W`` (every warning an error) into a temporary folder. Besides the real
build, a small site made here proves that the configuration of docs/conf.py turns a broken link, a missing page
and an orphan page into a failed build: without ``myst_heading_anchors`` or ``-W`` the real build would still
pass, and nothing else would notice. The README, which Sphinx never reads, has its relative links checked by
scripts/check_readme_links.py (what `make docs` runs after the build).
"""

from __future__ import annotations

import runpy
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"

pytestmark = pytest.mark.docs


def sphinx_build(source: Path, out: Path) -> subprocess.CompletedProcess[str]:
    """`make docs`'s build: warnings are errors, and all of them are reported before it fails."""
    return subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html", str(source), str(out)],
        capture_output=True,
        text=True,
        timeout=120,
    )


def link_checker() -> dict[str, Any]:
    return runpy.run_path(str(ROOT / "scripts" / "check_readme_links.py"))


def test_the_site_builds_with_warnings_as_errors(tmp_path: Path) -> None:
    built = sphinx_build(DOCS, tmp_path / "html")
    assert built.returncode == 0, f"sphinx-build -W failed:\n{built.stderr}"
    # Every Markdown page became a page of the site (none skipped by an exclude pattern).
    pages = {path.stem for path in DOCS.glob("*.md")}
    assert pages <= {path.stem for path in (tmp_path / "html").glob("*.html")}
    assert "changelog" in pages and "architecture" in pages


def test_a_broken_link_a_missing_page_and_an_orphan_fail_the_build(tmp_path: Path) -> None:
    source = tmp_path / "docs"
    source.mkdir()
    shutil.copy2(DOCS / "conf.py", source / "conf.py")
    (source / "index.md").write_text("# Home\n\n```{toctree}\nguide\n```\n")
    (source / "guide.md").write_text(
        "# Guide\n\n## Leases\n\n"
        "[fine](#leases) [fine too](index.md) "
        "[no such heading](#fencing) [no such page](missing.md) [no such heading there](index.md#nope)\n"
    )
    (source / "orphan.md").write_text("# In no toctree\n")
    built = sphinx_build(source, tmp_path / "html")
    assert built.returncode != 0
    warnings = built.stderr
    assert "guide.md:5" in warnings and "'fencing'" in warnings
    assert "'missing.md'" in warnings and "'nope'" in warnings
    assert "orphan.md: WARNING: document isn't included in any toctree" in warnings
    assert "'leases'" not in warnings  # the good links are not reported


def test_every_relative_link_of_the_readme_resolves() -> None:
    checker = link_checker()
    links = checker["relative_links"](ROOT / "README.md")
    assert any(link.startswith("docs/") and ".md#" in link for link in links), "the README links into the site"
    assert checker["broken_links"](ROOT / "README.md") == []


def test_the_readme_check_finds_a_missing_file_and_a_missing_anchor(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "page.md").write_text("# Page\n\n## Several worker processes (`--processes`)\n")
    readme = tmp_path / "README.md"
    readme.write_text(
        "# Title\n\n"
        "[ok](docs/page.md#several-worker-processes---processes) [ok](#title) [web](https://example.com/x)\n"
        "[gone](docs/gone.md) [no anchor](docs/page.md#leases) ![missing](docs/shot.png) [here](#nowhere)\n\n"
        "```md\n[in code](docs/not-a-link.md)\n```\n"
    )
    broken = link_checker()["broken_links"](readme)
    assert broken == [
        "README.md: docs/gone.md: no such file",
        "README.md: docs/page.md#leases: no heading with that anchor",
        "README.md: docs/shot.png: no such file",
        "README.md: #nowhere: no heading with that anchor",
    ]
