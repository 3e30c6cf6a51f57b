"""Loads the Lua transition scripts and runs them by SHA.

Each ``lua/<name>.lua`` is one transition; ``lua/_lib.lua`` (shared helpers) is put in front of each. A script
is run with EVALSHA; after a NOSCRIPT reply (Redis restarted or its script cache was flushed) it is sent
once in full with EVAL, which also caches it again, so callers never see the difference.
"""

from __future__ import annotations

import hashlib
from functools import cache
from pathlib import Path
from typing import Any

from .redis_errors import is_missing_script, run_script, run_script_async

LUA_DIR = Path(__file__).with_name("lua")


class Script:
    def __init__(self, name: str, source: str) -> None:
        self.name = name
        self.source = source
        self.sha = hashlib.sha1(source.encode()).hexdigest()

    def run(self, conn: Any, keys: list[str], args: list[Any]) -> Any:
        return run_script(conn, self.sha, self.source, keys, args)

    async def run_async(self, conn: Any, keys: list[str], args: list[Any]) -> Any:
        return await run_script_async(conn, self.sha, self.source, keys, args)

    def run_and_wait(self, conn: Any, keys: list[str], args: list[Any], replicas: int, timeout_ms: int) -> Any:
        """Run the script, then ``WAIT replicas timeout_ms`` on the same connection (one pipeline, so WAIT
        covers this write). Returns (the script's reply, how many replicas confirmed it)."""
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


@cache
def script(name: str) -> Script:
    """The transition script ``name`` with the shared helpers in front of it."""
    lib = (LUA_DIR / "_lib.lua").read_text()
    body = (LUA_DIR / f"{name}.lua").read_text()
    return Script(name, lib + "\n" + body)


def all_script_names() -> list[str]:
    return sorted(p.stem for p in LUA_DIR.glob("*.lua") if not p.stem.startswith("_"))
