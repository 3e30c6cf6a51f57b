"""Redis functions: every transition script as a function of one library, for servers that have them (Redis 7+).

A script run with EVALSHA defines every helper it carries on every call; a function library defines them once, when
it is loaded, and each call runs only the script's own body. That costs Redis measurably less per call (the done
script about a fifth less; docs/benchmarks.md), so a single call goes out as FCALL where the server takes it.

The library holds all of ``lua/_lib.lua`` and each ``lua/<name>.lua`` as the function ``<library>_<name>``. Its name
carries a hash of the Lua it is built from, so workers of two versions of taskq on one server each call their own
functions (a rolling deploy) and none ever replaces another's library. The helpers refer to ``KEYS`` and ``ARGV``
as the scripts do: in the library those are two locals that each function sets to its call's keys and arguments
before it runs its body (Redis runs one function at a time, and none calls another).

Whether a server takes functions is found out once per connection pool, by loading the library: a server without
FUNCTION (Redis 6.2), a user the ACL refuses it, or a Cluster client (the library would have to be on every master)
keeps EVALSHA, as does a pool marked with ``use_evalsha``. A function missing later (FUNCTION FLUSH, a server that
restarted without persistence) is loaded again and the call retried once, as EVALSHA resends a script after
NOSCRIPT. Over maxmemory a call goes out as EVALSHA (a function would be refused before it runs, a script only at
its first command that grows memory). Pipelined calls (a producer's enqueue: ``broker.run_pipeline``) go out as
FCALL too, and one that did not run is sent again by itself (``redis_errors.run_scripts_pipelined``); a producer's
write that waits for replicas, and asyncio clients, keep EVALSHA.
"""

from __future__ import annotations

import hashlib
import weakref
from collections.abc import Callable
from functools import cache, partial
from pathlib import Path
from typing import Any

from .connection import is_cluster
from .redis_errors import load_library, run_function

LIBRARY_PREFIX = "taskq_"
LUA_DIR = Path(__file__).with_name("lua")

_usable: weakref.WeakKeyDictionary[Any, bool] = weakref.WeakKeyDictionary()


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


def use_evalsha(conn: Any) -> None:
    """Run scripts on this connection's pool with EVALSHA even where the server has functions."""
    _usable[conn.connection_pool] = False


def usable(conn: Any) -> bool:
    """Whether scripts run as functions on this connection's pool (loading the library the first time). Asked on
    every producer's call: what is known of the pool is looked up first, before the slower check for a Cluster
    client (which has no pool of its own)."""
    pool = getattr(conn, "connection_pool", None)
    known = _usable.get(pool) if pool is not None else None
    if known is not None:
        return known
    if is_cluster(conn):
        return False
    loaded = load(conn)
    if loaded is None:
        return False  # Redis away: asked again next time; the EVALSHA that follows reports the outage
    _usable[pool] = loaded
    return loaded


def load(conn: Any) -> bool | None:
    """FUNCTION LOAD of the library (see ``redis_errors.load_library`` for the reply)."""
    return load_library(conn, library()[1])


def call(conn: Any, script: str, keys: list[str], args: list[Any], as_script: Callable[[], Any]) -> Any:
    """FCALL of the script's function; after "function not found", the library is loaded again and the call sent
    once more. Over maxmemory, ``as_script()`` runs it with EVALSHA (see ``redis_errors.run_function``)."""
    return run_function(conn, function_name(script), keys, args, partial(load, conn), as_script)
