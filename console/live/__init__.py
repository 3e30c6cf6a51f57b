"""Live updates over WebSockets: one hub per console process tails the engine's event streams, coalesces what it
reads every ``LIVE_INTERVAL`` (250 ms) and hands the summaries straight to the consumers of its own process (no
channel layer).

- ``coalesce``: turns a window of raw events into summaries (latest state per task, the queues that moved).
- ``hub``: the per-process reader and flusher (started lazily by the first consumer) and the subscription keys.
- ``consumers``: the WebSocket consumer: access check, subscription, resume from a cursor, forwarding.
- ``routing``: where the socket is opened (``taskq:live``), as ``taskq.asgi.with_taskq`` recognises it.
"""
