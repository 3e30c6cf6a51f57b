"""The HTTP API under ``/api/v1/``: lmstfy-style publish, consume, ack, fail, extend and dead letters, for
producers and consumers in any language. Bearer tokens only (``ApiToken``); JSON in and out; every operation goes
through the engine (``taskq.queues.engine.Client``, ``Inspector`` and ``Consumer``)."""
