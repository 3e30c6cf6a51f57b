"""What a transition call sends, decided once for the blocking and the asyncio broker: each face only sends the
commands these steps name and reads their replies (sans-I/O: nothing here touches a socket).

A command is its words (``Wire``), as ``execute_command`` and ``pack_command`` take them. A step is a generator
that yields commands and is sent each one's reply, an error reply as redis-py's exception (a value, not raised),
and returns the call's final reply (which may be such an exception: the face raises it, or keeps it in a
pipeline's outcomes). The decisions:

- ``first``: FCALL of the transition's function where the broker chose functions (``functions``), else EVALSHA.
- ``settle``: after an error reply to that first command, what else to send. NOSCRIPT (Redis restarted or its
  script cache was flushed): the script in full with EVAL, which caches it again. A function not found (FUNCTION
  FLUSH, a restart without persistence): FUNCTION LOAD and FCALL once more. Over maxmemory Redis refuses a function
  before it runs, where a script runs until its first command that would grow memory (so an acknowledgement,
  which frees some, still goes through): an OOM reply to FCALL sends EVALSHA instead, which keeps the script's
  behaviour exactly.
- ``settle_all``: the same for each reply of a pipeline that needs it, one by one, in order.
- ``replicated``: a producer's write with ``wait_replicas``: the script and WAIT on one connection, as one
  pipeline so WAIT covers this write (EVAL again after NOSCRIPT); too few replicas raise ``not_replicated``
  (unless the script refused the write, which then wrote nothing).
- ``one_after_another``: where calls cannot share a connection (a Redis Cluster client, ``wait_replicas``), a
  pipeline's calls run one by one and its outcomes end at the first error.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import redis
from redis.exceptions import NoScriptError, OutOfMemoryError

from ..enqueue_replies import Refusal
from ..errors import EngineError, RedisUnavailableError
from ..transitions import Call
from . import functions, topology
from .redis_errors import translate

#: One command's words: ``("EVALSHA", sha, 2, key1, key2, arg...)``.
Wire = tuple[Any, ...]
#: A step: yields commands, is sent their replies (error replies as exceptions), returns the final reply.
Step = Generator[Wire, Any, Any]


def first(call: Call, as_function: bool) -> Wire:
    """The command that runs ``call``: FCALL where the broker chose functions and the script is one, else EVALSHA."""
    script = call.script
    if as_function and script.function:
        return ("FCALL", script.function, len(call.keys), *call.keys, *call.args)
    return ("EVALSHA", script.sha, len(call.keys), *call.keys, *call.args)


def in_library(calls: list[Call]) -> bool:
    """Whether any of ``calls`` is a function of the library (the others run with EVALSHA whatever is chosen)."""
    return any(call.script.function for call in calls)


def is_missing_script(reply: Any) -> bool:
    return isinstance(reply, NoScriptError)


def function_did_not_run(reply: Any) -> bool:
    """Whether an FCALL's error reply says the function never ran, so it may be sent again: the library is not
    loaded, or Redis is over maxmemory and refused it before it ran."""
    return isinstance(reply, OutOfMemoryError) or _function_missing(reply)


def _function_missing(reply: Any) -> bool:
    return isinstance(reply, redis.ResponseError) and "function not found" in str(reply).lower()


def settle(call: Call, reply: Any, as_function: bool) -> Step:
    """From the error reply to ``first(call, as_function)`` to the call's final reply (see the module docstring);
    any other error reply is the call's own, returned as it is."""
    script = call.script
    words = (len(call.keys), *call.keys, *call.args)
    if as_function and script.function:
        if _function_missing(reply):
            yield functions.load_command()  # "already exists" when another client loaded it first: fine
            reply = yield ("FCALL", script.function, *words)
        if isinstance(reply, OutOfMemoryError):
            reply = yield ("EVALSHA", script.sha, *words)
    if is_missing_script(reply):
        reply = yield ("EVAL", script.source, *words)
    return reply


def mendable(replies: list[Any], as_function: bool) -> bool:
    """Whether any of a pipeline's replies is one ``settle_all`` sends again (most often none is: the faces then
    skip it)."""
    for reply in replies:
        if isinstance(reply, redis.ResponseError) and (
            is_missing_script(reply) or (as_function and function_did_not_run(reply))
        ):
            return True
    return False


def settle_all(calls: list[Call], replies: list[Any], as_function: bool) -> Step:
    """``replies`` (a pipeline's, in order) with each that ``settle`` can mend sent again, one by one."""
    for n, (call, reply) in enumerate(zip(calls, replies, strict=False)):
        if is_missing_script(reply) or (as_function and function_did_not_run(reply)):
            replies[n] = yield from settle(call, reply, as_function)
    return replies


def not_replicated(op: str, confirmed: int, where: topology.Topology) -> RedisUnavailableError:
    """A producer's write the master applied but too few replicas confirmed: a failover now may lose it. The
    caller does what it does after a lost reply: retry with the same task id (TaskIdConflictError: it is there)."""
    return RedisUnavailableError(
        f"applied on the master but confirmed by {confirmed} of {where.wait_replicas} replica(s) within "
        f"{where.wait_timeout_ms} ms (wait_replicas): a failover may lose it; retry with the same task id",
        op=op,
    )


#: A replicated step yields the commands of one pipeline at a time and is sent their replies.
ReplicatedStep = Generator[list[Wire], list[Any], Any]


def replicated(call: Call, where: topology.Topology) -> ReplicatedStep:
    """Run ``call`` and ``WAIT`` for ``where.wait_replicas`` replicas on the same connection (one pipeline, sent
    again with EVAL after NOSCRIPT). Returns the script's reply; raises its error reply, or ``not_replicated``."""
    words = (len(call.keys), *call.keys, *call.args)
    wait = ("WAIT", where.wait_replicas, where.wait_timeout_ms)
    reply, confirmed = yield [("EVALSHA", call.script.sha, *words), wait]
    if is_missing_script(reply):
        reply, confirmed = yield [("EVAL", call.script.source, *words), wait]
    for answer in (reply, confirmed):
        if isinstance(answer, Exception):
            raise answer
    # A refused task wrote nothing, so there is nothing to wait for: its parse raises its error, or (the
    # producer's flows) hands the Refusal back, as without wait_replicas.
    if int(confirmed) < where.wait_replicas and not isinstance(call.parse(reply), Refusal):
        raise not_replicated(call.op, int(confirmed), where)
    return reply


def one_after_another(calls: list[Call]) -> Generator[Call, Any, list[Any]]:
    """A pipeline's calls run one at a time (yielded, each to be run by itself): its outcomes, ending at the
    first error."""
    outcomes: list[Any] = []
    for call in calls:
        try:
            outcomes.append((yield call))
        except EngineError as exc:
            return [*outcomes, exc]
    return outcomes


def outcomes_of(calls: list[Call], replies: list[Any]) -> list[Any]:
    """A ``Pipeline``'s outcomes from the final replies (redis-py exceptions among them) of its calls."""
    return [
        translate(call.op, reply, call.script.name) if isinstance(reply, BaseException) else call.parse(reply)
        for call, reply in zip(calls, replies, strict=False)
    ]
