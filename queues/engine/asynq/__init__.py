"""asynq's wire format: taskq reading and writing a Redis that Go asynq (v0.25-0.26) uses, key for key.

- ``wire``: the protobuf messages asynq stores (a task, a server, a worker, a scheduler entry, an enqueue event),
  encoded and decoded here, byte for byte as Go's ``proto.Marshal`` writes them.
- ``keys``: asynq's key names (prefix ``asynq``, the queue as a Cluster hash tag).
- ``scripts``: the Lua transitions of ``lua/``, one per state change, each keeping asynq's own preconditions so
  that Go servers and taskq work on the same keys.

Everything else (the producer, the inspector's parts, the worker) builds on these three and sends through the
broker, like the rest of the engine:

- ``producer``: ``AsynqClient`` (and ``AsyncAsynqClient``), which enqueue as asynq's Go client does, by the rules
  of ``enqueue_plan``.
"""

from .producer import AsyncAsynqClient, AsynqClient

__all__ = ["AsyncAsynqClient", "AsynqClient"]
