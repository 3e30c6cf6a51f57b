"""Loads the Lua transition scripts and runs them by SHA.

Each ``lua/<name>.lua`` is one transition. ``lua/_lib.lua`` holds the shared helpers; each script is built with
only the helpers it calls (and those they call) in front of it: every ``local function`` defined runs on every
call, so carrying all of them cost each call Redis time for nothing. A script is run with EVALSHA; after a
NOSCRIPT reply (Redis restarted or its script cache was flushed) it is sent once in full with EVAL, which also
caches it again, so callers never see the difference. Where the server has Redis functions, a single call runs
the same transition as a function instead (see functions.py), which costs Redis less per call.
"""

from __future__ import annotations

import hashlib
import re
from functools import cache
from typing import Any

from . import functions
from .connection import is_cluster as is_cluster_client
from .functions import LUA_DIR
from .functions import all_script_names as all_script_names  # public here too: the scripts and their names
from .redis_errors import is_missing_script, on_slot_master, run_script, run_script_async


class Script:
    def __init__(self, name: str, source: str, as_function: bool = False) -> None:
        self.name = name
        self.source = source
        self.sha = hashlib.sha1(source.encode()).hexdigest()
        self.as_function = as_function  # a transition script of lua/: in the function library too (functions.py)
        #: The name of the function that runs this transition where the server has functions; "" for a script that is
        #: in no library.
        self.function = functions.function_name(name) if as_function else ""

    def run(self, conn: Any, keys: list[str], args: list[Any]) -> Any:
        if self.as_function and functions.usable(conn):
            return functions.call(
                conn, self.name, keys, args, lambda: run_script(conn, self.sha, self.source, keys, args)
            )
        return run_script(conn, self.sha, self.source, keys, args)

    async def run_async(self, conn: Any, keys: list[str], args: list[Any]) -> Any:
        return await run_script_async(conn, self.sha, self.source, keys, args)

    def run_and_wait(self, conn: Any, keys: list[str], args: list[Any], replicas: int, timeout_ms: int) -> Any:
        """Run the script, then ``WAIT replicas timeout_ms`` on the same connection (one pipeline, so WAIT
        covers this write). On a Redis Cluster both go to the master of the keys' slot. Returns (the script's
        reply, how many replicas confirmed it)."""
        if is_cluster_client(conn):
            return on_slot_master(conn, keys[0], lambda node: self.run_and_wait(node, keys, args, replicas, timeout_ms))
        for command in ("evalsha", "eval"):
            pipe = conn.pipeline(transaction=False)
            getattr(pipe, command)(self.sha if command == "evalsha" else self.source, len(keys), *keys, *args)
            pipe.execute_command("WAIT", replicas, timeout_ms)
            reply, confirmed = pipe.execute(raise_on_error=False)
            if not is_missing_script(reply):
                break
        return _checked(reply), int(_checked(confirmed))

    async def run_and_wait_async(
        self, conn: Any, keys: list[str], args: list[Any], replicas: int, timeout_ms: int
    ) -> Any:
        for command in ("evalsha", "eval"):
            async with conn.pipeline(transaction=False) as pipe:
                getattr(pipe, command)(self.sha if command == "evalsha" else self.source, len(keys), *keys, *args)
                pipe.execute_command("WAIT", replicas, timeout_ms)
                reply, confirmed = await pipe.execute(raise_on_error=False)
            if not is_missing_script(reply):
                break
        return _checked(reply), int(_checked(confirmed))

    def __repr__(self) -> str:
        return f"Script({self.name!r})"


def _checked(reply: Any) -> Any:
    """A pipeline reply, or its error raised (pipelines run with raise_on_error=False hand errors back)."""
    if isinstance(reply, Exception):
        raise reply
    return reply


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
