"""Imports inside functions only where something needs them there, each with its reason in a word.

An import inside a function (or a method) hides a dependency from the top of its module and from the import
contracts' reader, so it is kept only where the top cannot hold it: an import cycle, an optional extra, a module
that must load before Django is set up or before the app registry is ready, an import made for what it registers.
Each one says which, in a comment on its line or on the line just above::

    from pyspark.sql import SparkSession  # optional: pyspark (taskq[spark])

    # before setup: a project's asgi.py imports this module before Django is set up
    from taskq.console.live.consumers import LiveConsumer

A bare one fails here, named by file and line.
"""

from __future__ import annotations

import ast
import io
import textwrap
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PRODUCT = ("taskq", "queues", "worker", "console", "metrics")
#: Folders of the product's packages that are not product code.
LEFT_OUT = frozenset({"migrations", "tests", "bench", "demo"})


def product_modules() -> list[str]:
    """Every Python module of the product, relative to the repository; ``taskq/``'s links to the other folders
    (taskq/queues -> ../queues...) are walked once, by their own folder."""
    modules = set()
    for package in PRODUCT:
        for path in (ROOT / package).rglob("*.py"):
            relative = path.resolve().relative_to(ROOT)
            if not LEFT_OUT.intersection(relative.parts):
                modules.add(relative.as_posix())
    return sorted(modules)


def inner_imports(tree: ast.AST, inside: bool = False) -> list[ast.Import | ast.ImportFrom]:
    """The import statements of ``tree`` that run inside a function or method, at any depth."""
    found: list[ast.Import | ast.ImportFrom] = []
    for node in ast.iter_child_nodes(tree):
        if inside and isinstance(node, ast.Import | ast.ImportFrom):
            found.append(node)
        found += inner_imports(node, inside or isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef))
    return found


def comments(source: str) -> tuple[set[int], set[int]]:
    """The lines that carry a comment, and those that are nothing but one (read by the tokenizer, so a ``#`` in
    a string is no comment)."""
    with_comment, only_comment = set(), set()
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            line = token.start[0]
            with_comment.add(line)
            if not token.line[: token.start[1]].strip():
                only_comment.add(line)
    return with_comment, only_comment


def bare_inner_imports(source: str) -> list[int]:
    """The lines of the imports inside functions that give no reason: no comment on any line of the statement,
    and none alone on the line just above it."""
    with_comment, only_comment = comments(source)
    bare = []
    for node in inner_imports(ast.parse(source)):
        statement = range(node.lineno, (node.end_lineno or node.lineno) + 1)
        if node.lineno - 1 not in only_comment and not with_comment.intersection(statement):
            bare.append(node.lineno)
    return bare


def bare_in(module: str) -> list[int]:
    return bare_inner_imports((ROOT / module).read_text(encoding="utf-8"))


def test_every_import_inside_a_function_says_why_it_is_there():
    bare = [f"{module}:{line}" for module in product_modules() for line in bare_in(module)]
    assert not bare, (
        "move each import to the top of its module, or say on its line or the line above why it cannot be there "
        "(# cycle: ..., # optional: ..., # before setup: ..., # app registry: ..., # registers checks): "
        + ", ".join(bare)
    )


def test_the_walk_sees_the_product_and_leaves_the_rest_out():
    # Guards the tests above against a layout change that leaves them reading nothing (or the wrong files).
    modules = product_modules()
    assert {"taskq/asgi.py", "queues/admin.py", "worker/testing/pytest_plugin.py", "metrics/apps.py"} <= set(modules)
    assert not [module for module in modules if LEFT_OUT.intersection(module.split("/"))]
    assert not [module for module in modules if module.startswith(("taskq/queues/", "taskq/worker/"))]
    assert (ROOT / "queues" / "migrations" / "0001_initial.py").exists()


CASES = {
    "a bare import in a function": (
        """
        def f():
            import json
            return json
        """,
        [2],
    ),
    "in a method, an async function and a function inside a function": (
        """
        class C:
            def m(self):
                from os import path

        async def g():
            import json

        def outer():
            def inner():
                import re
        """,
        [3, 6, 10],
    ),
    "a reason on the line or alone on the line above": (
        """
        def f():
            import json  # optional: json
            # cycle: x imports this module
            from x import y
            from z import (  # before setup: z needs Django
                w,
            )
            from q import (
                r,  # app registry: q loads models
            )
        """,
        [],
    ),
    "one reason does not cover the next import, nor one two lines up, nor a comment after code": (
        """
        def f():
            # cycle: a imports this module
            import a
            import b
            # cycle: c imports this module

            import c
            x = 1  # one
            import d
        """,
        [4, 7, 9],
    ),
    "a # in a string is not a comment": (
        """
        def f():
            s = "# not a comment"
            import json; t = "# nor this"
        """,
        [3],
    ),
    "imports at module level, in a class body or under TYPE_CHECKING are not inner imports": (
        """
        import json
        from typing import TYPE_CHECKING
        if TYPE_CHECKING:
            from os import path
        class C:
            import re
        """,
        [],
    ),
}


@pytest.mark.parametrize("source, expected", CASES.values(), ids=CASES.keys())
def test_the_walk_finds_exactly_the_bare_inner_imports(source, expected):
    assert bare_inner_imports(textwrap.dedent(source).lstrip("\n")) == expected
