"""The Lua transitions over asynq's keys: ``lua/<name>.lua``, each one state change with asynq's own
preconditions and replies, so a Go server reading the same keys sees what its own scripts would have written.

They run with EVALSHA (never as taskq's function library: that library is taskq's layout, and a keyspace shared
with Go asynq is not). Scripts of one family share helpers: ``lua/_<family>.lua``, where it exists, is put in
front of every ``lua/<family>_*.lua`` (``_work.lua`` for the worker's ``work_*.lua``).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

from ..scripts import Script
from ..transitions import Call

LUA_DIR = Path(__file__).with_name("lua")


@cache
def script(name: str) -> Script:
    """The script of ``lua/<name>.lua``, behind its family's helpers (``lua/_<family>.lua``) when it has any."""
    helpers = LUA_DIR / f"_{name.partition('_')[0]}.lua"
    source = (LUA_DIR / f"{name}.lua").read_text()
    if helpers.exists():
        source = helpers.read_text() + "\n" + source
    return Script(f"asynq_{name}", source)


def call(op: str, name: str, keys: list[str], args: list[Any], parse: Callable[[Any], Any] | None = None) -> Call:
    """One run of ``lua/<name>.lua`` for the broker (``broker.run(call(...))``); ``parse`` reads its reply."""
    if parse is None:
        return Call(op, script(name), keys, args)
    return Call(op, script(name), keys, args, parse)
