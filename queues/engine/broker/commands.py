"""Plain commands and MULTI/EXEC batches (``sans_io.Command``, ``sans_io.Batch``) on a redis-py client, blocking or
asyncio. On a Redis Cluster a batch is atomic only when its keys share a slot, and an XREAD over streams of many
slots is split into one read per slot, polled (see ``cluster``)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from ..sans_io import Batch, Command
from . import cluster
from .connection import is_cluster


def _atomic(conn: Any, batch: Batch) -> bool:
    return batch.atomic and cluster.batch_is_atomic(is_cluster(conn), [command.args[0] for command in batch.commands])


def run_command(conn: Any, request: Command | Batch) -> Any:
    """Run a plain command or a batch on a blocking redis-py client."""
    if isinstance(request, Batch):
        pipe = conn.pipeline(transaction=_atomic(conn, request))
        for command in request.commands:
            getattr(pipe, command.name)(*command.args, **command.kwargs)
        return pipe.execute()
    reads = cluster.split_xread(is_cluster(conn), request.name, request.args, request.kwargs)
    if reads:
        pipe = conn.pipeline(transaction=False)
        for read in reads:
            pipe.xread(**read)
        found = cluster.merge_xread(pipe.execute())
        if not found:
            time.sleep(cluster.poll_wait(request.kwargs))
        return found
    return getattr(conn, request.name)(*request.args, **request.kwargs)


async def run_command_async(conn: Any, request: Command | Batch) -> Any:
    """Run a plain command or a batch on an asyncio redis-py client."""
    if isinstance(request, Batch):
        async with conn.pipeline(transaction=_atomic(conn, request)) as pipe:
            for command in request.commands:
                getattr(pipe, command.name)(*command.args, **command.kwargs)
            return await pipe.execute()
    reads = cluster.split_xread(is_cluster(conn), request.name, request.args, request.kwargs)
    if reads:
        async with conn.pipeline(transaction=False) as pipe:
            for read in reads:
                pipe.xread(**read)
            found = cluster.merge_xread(await pipe.execute())
        if not found:
            await asyncio.sleep(cluster.poll_wait(request.kwargs))
        return found
    return await getattr(conn, request.name)(*request.args, **request.kwargs)
