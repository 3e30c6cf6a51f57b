"""The live hub renders through the console's own renderers (``console/renderers.py``, ``console/task_page.py``),
which the views call too: no module of ``console/live`` imports a view, and none imports inside a function (each
import is at the top, where the module's dependencies are read)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LIVE = ROOT / "console" / "live"


def imports(tree: ast.Module) -> list[tuple[ast.AST, str, bool]]:
    """(node, module imported, whether at the module's top level) of every import in ``tree``; a relative module
    is written with its dots (``..views.servers``)."""
    top = {id(node) for node in tree.body}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            found.append((node, "." * node.level + (node.module or ""), id(node) in top))
        elif isinstance(node, ast.Import):
            found.extend((node, alias.name, id(node) in top) for alias in node.names)
    return found


def live_imports() -> list[tuple[str, int, str, bool]]:
    return [
        (path.name, node.lineno, module, at_top)  # type: ignore[attr-defined]
        for path in sorted(LIVE.glob("*.py"))
        for node, module, at_top in imports(ast.parse(path.read_text()))
    ]


def test_no_live_module_imports_a_view():
    views = [(f, n, m) for f, n, m, _ in live_imports() if m.startswith("..views") or "console.views" in m]
    assert views == []


def test_no_live_module_imports_inside_a_function():
    inner = [(f, n, m) for f, n, m, at_top in live_imports() if not at_top and m != "__future__"]
    assert inner == []


def test_the_scan_sees_both():
    tree = ast.parse("from ..views.servers import server_row\ndef f():\n    from .coalesce import QueueWindow\n")
    assert [(m, top) for _, m, top in imports(tree)] == [("..views.servers", True), (".coalesce", False)]
