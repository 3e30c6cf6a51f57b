"""What a flow's plain commands need on a Redis Cluster: a MULTI and a multi-key command must stay in one slot.

A ``Batch`` whose commands touch one slot (one queue, or the global keys, which share the ``{prefix}`` tag on a
cluster) still runs as MULTI/EXEC. One that spans queues runs as a plain pipeline there: each reply is still
exact, but replies of different queues are no longer one snapshot. An XREAD of several queues' streams cannot
block across slots, so on a cluster it becomes one non-blocking XREAD per stream, and when none has news the
reader waits ``POLL_SECONDS`` (the live console then polls instead of blocking).
"""

from __future__ import annotations

from typing import Any

from redis.crc import key_slot

POLL_SECONDS = 0.2


def _slot(key: Any) -> int:
    return key_slot(key if isinstance(key, bytes) else str(key).encode())


def is_one_slot(keys: list[Any]) -> bool:
    return len({_slot(key) for key in keys}) <= 1


def batch_is_atomic(clustered: bool, first_keys: list[Any]) -> bool:
    """Whether a batch whose commands start with ``first_keys`` can run as one MULTI."""
    return not clustered or is_one_slot(first_keys)


def split_xread(clustered: bool, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[dict[str, Any]]:
    """The per-stream reads an XREAD must become on a cluster (``[]``: run it as it is)."""
    if not clustered or name != "xread" or is_one_slot(list(args[0])):
        return []
    count = kwargs.get("count")
    return [{"streams": {stream: position}, "count": count} for stream, position in args[0].items()]


def merge_xread(replies: list[Any]) -> list[Any]:
    """One XREAD reply (a list of ``[stream, entries]``) from the per-stream replies."""
    return [entry for reply in replies if reply for entry in reply]


def poll_wait(kwargs: dict[str, Any]) -> float:
    """How long to wait before answering an empty split XREAD: its BLOCK, at most ``POLL_SECONDS``."""
    block = kwargs.get("block")
    return 0.0 if block is None else min(POLL_SECONDS, block / 1000)
