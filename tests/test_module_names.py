"""Each product module's file name says what it is: a name used twice in the product is either one of the names
Django (or taskq's handler discovery) fixes, or its collision is deliberate and every module that bears it says
so in its docstring, naming the others.

Two modules called ``policies.py`` made a reader open the wrong one (issue 24): the Django side that mirrors the
admin into Redis is ``queues/policy_sync.py``, the engine's store ``queues/engine/policies.py``. A name that repeats
by accident fails here; one that repeats on purpose carries the phrase ``DECLARATION`` and the paths of the others.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PRODUCT = ("taskq", "queues", "worker", "console", "metrics", "demo")

#: The fixed phrase a module's docstring carries when it shares its name on purpose.
DECLARATION = "deliberately shares its name with"

#: Names whose repetition is the convention, not a choice: Django looks them up by name in each app or package
#: (apps, models, urls, views, forms, admin), ``settings`` is a Django settings module's name (the console's and
#: the demo's; the engine's holds those settings' definitions, the console's settings page is named after its page),
#: ``tasks`` is the module of an app's handlers that the worker imports from every installed app
#: (``worker/discovery.py``, as Celery and django-rq do), and ``asgi`` is the name startproject gives a project's
#: ASGI module (the standalone console's, and ``taskq.asgi``, which a project's own imports ``with_taskq`` from).
CONVENTIONS = frozenset({"__init__", "apps", "models", "urls", "views", "forms", "admin", "settings", "tasks", "asgi"})


def product_modules() -> list[Path]:
    """Every Python module of the product, relative to the repository. Migrations are generated and named by
    number; a management command's file name is the command's name, which Django fixes."""
    modules = []
    for package in PRODUCT:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).parts
            if "migrations" in parts or parts[-3:-1] == ("management", "commands"):
                continue
            modules.append(path.relative_to(ROOT))
    return modules


def collisions(modules: list[Path]) -> dict[str, list[Path]]:
    by_name: dict[str, list[Path]] = defaultdict(list)
    for module in modules:
        by_name[module.stem].append(module)
    return {name: paths for name, paths in by_name.items() if len(paths) > 1 and name not in CONVENTIONS}


def undeclared(name: str, paths: list[Path], docstring_of) -> list[str]:
    """What is wrong with one repeated name: each module that bears it must carry the declaration and name every
    other module of that name by its path."""
    problems = []
    for path in paths:
        doc = docstring_of(path)
        others = [other.as_posix() for other in paths if other != path]
        if DECLARATION not in " ".join(doc.lower().split()):
            problems.append(f"{path}: {name}.py also at {', '.join(others)}; rename it, or say '{DECLARATION}' why")
            continue
        missing = [other for other in others if other not in doc]
        if missing:
            problems.append(f"{path}: its declaration does not name {', '.join(missing)}")
    return problems


def docstring(path: Path) -> str:
    return ast.get_docstring(ast.parse((ROOT / path).read_text(encoding="utf-8"))) or ""


def test_every_repeated_module_name_is_a_convention_or_declared_deliberate() -> None:
    problems = [
        problem
        for name, paths in sorted(collisions(product_modules()).items())
        for problem in undeclared(name, paths, docstring)
    ]
    assert not problems, "\n".join(problems)


def test_the_modules_renamed_for_issue_24_stay_unique() -> None:
    """The four pairs the issue named, now unique: a new module by an old name would bring the confusion back."""
    names = [module.stem for module in product_modules()]
    for name in ("policies", "periodic", "redaction", "events"):
        assert names.count(name) == 1, name


# The check itself, on made-up trees: it must fail on an accidental repeat, or it proves nothing above.


def fake_docstrings(docs: dict[str, str]):
    return lambda path: docs[path.as_posix()]


def test_an_accidental_repeat_is_reported() -> None:
    modules = [Path("queues/policies.py"), Path("queues/engine/policies.py"), Path("queues/models.py")]
    found = collisions(modules)
    assert list(found) == ["policies"]
    problems = undeclared("policies", found["policies"], fake_docstrings({p.as_posix(): "Policies." for p in modules}))
    assert len(problems) == 2 and "rename it" in problems[0]


@pytest.mark.parametrize(
    ("other_doc", "expected"),
    [
        ("Deliberately shares its name with ``a/x.py``: the page.", 0),
        ("Deliberately shares its name with the page.", 1),  # does not say which
        ("The page.", 1),
    ],
)
def test_a_declaration_must_be_there_and_name_the_others(other_doc: str, expected: int) -> None:
    docs = {"a/x.py": "The engine's x.\n\nDeliberately shares its\nname with ``b/x.py``.", "b/x.py": other_doc}
    paths = [Path("a/x.py"), Path("b/x.py")]
    assert len(undeclared("x", paths, fake_docstrings(docs))) == expected


def test_convention_names_and_commands_are_exempt() -> None:
    assert collisions([Path("console/urls.py"), Path("metrics/urls.py")]) == {}
    assert all("commands" not in module.parts for module in product_modules())
