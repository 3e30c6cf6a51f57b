"""The asyncio pool (``taskworker --pool asyncio``): fetch, run and acknowledge on one event loop, over one
``redis.asyncio`` connection pool, so that a task crosses no thread between its fetch and its ack.

- ``asyncio_processor``: the processor whose fetch loop, handlers and ack writer are tasks of one loop.
- ``slots``: the loop's handler slots, long-lived coroutines that run one async attempt after another.
- ``asyncio_acker``: writes on that loop the outcomes of the handlers that returned, with the acker's own flow.
- ``loop_signal``: a wake-up that other threads set and the loop awaits.
- ``event_loops``: which event loop runs it (asyncio's own, or uvloop when asked for and installed).
"""
