"""Live updates over Channels: one reader per console process tails the engine's event streams, coalesces what
it reads every ``LIVE_INTERVAL`` (250 ms) and sends the summaries to channel-layer groups; WebSocket consumers
join the groups of the page they serve.

- ``coalesce``: turns a window of raw events into summaries (latest state per task, the queues that moved).
- ``hub``: the per-process reader and flusher (started lazily by the first consumer) and the group names.
- ``consumers``: the WebSocket consumer: access check, subscription, resume from a cursor, forwarding.
- ``routing``: the WebSocket URL patterns mounted by ``console/asgi.py``.
"""
