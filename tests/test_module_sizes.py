"""No product module is over 600 lines (issue 24): a module that grows past that is split by concern, as the
inspector was (``queues/engine/inspection/``), before it becomes the next 1,500-line file. Django's generated
migrations are left out: their length is the schema's, not ours to split."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PRODUCT = ("taskq", "queues", "worker", "console", "metrics")
MOST_LINES = 600


def product_modules() -> dict[str, int]:
    """Every Python module of the product (migrations excepted), relative path -> its number of lines."""
    sizes = {}
    for package in PRODUCT:
        for path in (ROOT / package).rglob("*.py"):
            if "migrations" in path.relative_to(ROOT).parts:
                continue
            sizes[path.relative_to(ROOT).as_posix()] = len(path.read_text(encoding="utf-8").splitlines())
    return sizes


def test_no_product_module_is_over_600_lines():
    too_long = {path: lines for path, lines in sorted(product_modules().items()) if lines > MOST_LINES}
    assert not too_long, f"split these modules by concern, each under {MOST_LINES} lines: {too_long}"


def test_the_walk_sees_the_product_and_leaves_migrations_out():
    # Guards the test above against a layout change that leaves it counting nothing (or the wrong files).
    sizes = product_modules()
    assert {"queues/engine/inspector.py", "worker/processor.py", "console/settings.py", "metrics/collector.py"} <= set(
        sizes
    )
    assert not [path for path in sizes if "/migrations/" in path]
    assert (ROOT / "queues" / "migrations" / "0001_initial.py").exists()
