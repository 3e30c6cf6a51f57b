"""The Lua transition scripts, built for sending: each as a script (its source and SHA) and as a function of one
library. Nothing here does I/O; the broker sends them (``broker.scripting``).

Each ``lua/<name>.lua`` is one transition. ``lua/_lib.lua`` holds the shared helpers; each script is built with
only the helpers it calls (and those they call) in front of it: every ``local function`` defined runs on every
call, so carrying all of them cost each call Redis time for nothing. A script is run with EVALSHA; after a
NOSCRIPT reply (Redis restarted or its script cache was flushed) it is sent once in full with EVAL, which also
caches it again, so callers never see the difference.

Where the server has Redis functions (7+), a transition runs as a function of one library instead: a script run
with EVALSHA defines every helper it carries on every call; a function library defines them once, when it is
loaded, and each call runs only the script's own body. That costs Redis measurably less per call (the done script
about a fifth less; docs/benchmarks.md). The library holds all of ``lua/_lib.lua`` and each ``lua/<name>.lua`` as
the function ``<library>_<name>``. Its name carries a hash of the Lua it is built from, so workers of two versions
of taskq on one server each call their own functions (a rolling deploy) and none ever replaces another's library.
The helpers refer to ``KEYS`` and ``ARGV`` as the scripts do: in the library those are two locals that each
function sets to its call's keys and arguments before it runs its body (Redis runs one function at a time, and
none calls another). Whether a broker sends FCALL or EVALSHA is decided once per broker (``broker.functions``).

It deliberately shares its name with ``queues/engine/asynq/scripts.py``, which does the same over Go asynq's keys.
"""

from __future__ import annotations

import hashlib
import re
from functools import cache
from pathlib import Path

LIBRARY_PREFIX = "taskq_"
LUA_DIR = Path(__file__).with_name("lua")


class Script:
    def __init__(self, name: str, source: str, as_function: bool = False) -> None:
        self.name = name
        self.source = source
        self.sha = hashlib.sha1(source.encode()).hexdigest()
        #: The name of the function that runs this transition where the server has functions; "" for a script that is
        #: in no library (built elsewhere than lua/).
        self.function = function_name(name) if as_function else ""

    def __repr__(self) -> str:
        return f"Script({self.name!r})"


@cache
def library() -> tuple[str, str]:
    """(The library's name, its code for FUNCTION LOAD)."""
    lib = (LUA_DIR / "_lib.lua").read_text()
    bodies = {name: (LUA_DIR / f"{name}.lua").read_text() for name in all_script_names()}
    digest = hashlib.sha1("\0".join([lib, *bodies, *bodies.values()]).encode()).hexdigest()[:16]
    name = LIBRARY_PREFIX + digest
    functions = "".join(
        f"redis.register_function('{name}_{script}', function(keys, args)\nKEYS, ARGV = keys, args\n{body}\nend)\n"
        for script, body in bodies.items()
    )
    return name, f"#!lua name={name}\nlocal KEYS, ARGV\n{lib}\n{functions}"


def all_script_names() -> list[str]:
    """The transition scripts: every ``lua/<name>.lua`` but the helpers."""
    return sorted(p.stem for p in LUA_DIR.glob("*.lua") if not p.stem.startswith("_"))


def function_name(script: str) -> str:
    return f"{library()[0]}_{script}"


# A top-level definition in _lib.lua: ``local function f(``, ``local NAME = ...`` or a forward declaration
# ``local f``, or the assignment ``f = function(`` that completes one.
_DEFINITION = re.compile(r"^(?:local function (\w+)|local (\w+)\b|(\w+) = function\b)")
_COMMENT = re.compile(r"--[^\n]*")
# A name a chunk of Lua refers to: not a field (``ctx.tally``, ``a:b``), not a key of a table constructor or an
# assignment's target (``tally = {}``).
_WORD = re.compile(r"(?<![.:\w])[A-Za-z_]\w*(?!\s*=[^=])")


def _words(lua: str) -> set[str]:
    return set(_WORD.findall(_COMMENT.sub("", lua)))


@cache
def helpers() -> list[tuple[str, str]]:
    """``lua/_lib.lua`` cut into its top-level definitions, in file order: (name, text with the comment above it).
    Lines at column 0 that start a definition open a new one; comments and blank lines at column 0 go with the
    definition below them; every other line (indented, or a closing ``end``) belongs to the one above."""
    parts: list[list[str]] = []
    above: list[str] = []
    for line in (LUA_DIR / "_lib.lua").read_text().splitlines(keepends=True):
        found = _DEFINITION.match(line)
        if found:
            parts.append([next(g for g in found.groups() if g), "".join(above) + line])
            above = []
        elif line.startswith("--") or not line.strip() or not parts:
            above.append(line)
        else:
            parts[-1][1] += line
    return [(name, text) for name, text in parts]


@cache
def _helper_uses() -> dict[str, set[str]]:
    """Each helper's name -> the helpers its definition refers to (a forward declaration and the assignment that
    completes it count as one)."""
    texts: dict[str, str] = {}
    for name, text in helpers():
        texts[name] = texts.get(name, "") + text
    return {name: _words(text) & texts.keys() for name, text in texts.items()}


def needed_helpers(body: str) -> set[str]:
    """The names of the helpers ``body`` calls, directly or through other helpers."""
    uses = _helper_uses()
    needed: set[str] = set()
    todo = _words(body) & uses.keys()
    while todo:
        name = todo.pop()
        needed.add(name)
        todo |= uses[name] - needed
    return needed


@cache
def script(name: str) -> Script:
    """The transition script ``name`` with the helpers it needs in front of it."""
    body = (LUA_DIR / f"{name}.lua").read_text()
    needed = needed_helpers(body)
    lib = "".join(text for helper, text in helpers() if helper in needed)
    return Script(name, lib + "\n" + body, as_function=True)
