"""The worker on asynq's keys (``TASKS_KEY_FORMAT = "asynq"``): ``taskworker`` serving asynq queues beside Go
asynq servers, with asynq's own dequeue, lease, extension, retry, archive, completion, recovery and heartbeat.

- ``runtime``: the composition root, which builds the parts below in order and runs them until a signal;
- ``timings``: asynq's intervals, or taskq's settings where they are shorter;
- ``task_runner``: fetches one task per free slot, runs its handler, writes its outcome, cancels and requeues;
- ``server_state``: the heartbeat, which extends the leases of running tasks and writes ServerInfo and WorkerInfo;
- ``upkeep``: the forwarder, the janitor, the recoverer and the syncer, each a loop of its own;
- ``cancel_listener``: the task ids published on ``asynq:cancel``.

Everything reaches Redis through ``AsynqWorkerStore`` (``taskq.queues.engine.asynq.worker_store``).
"""
