"""The figures asynq v0.26 hard-codes, which every writer on a Redis shared with Go servers must keep alike: the
lease of a running task, how often the forwarder and the janitor run, and how far an archive is trimmed.
"""

from __future__ import annotations

#: ``base.LeaseDuration``: seconds a dequeued task's lease lasts, extended by each heartbeat.
ASYNQ_LEASE = 30.0
#: The forwarder's and the janitor's intervals (server.go), seconds.
ASYNQ_FORWARDER = 5.0
ASYNQ_JANITOR = 8.0
#: ``maxArchiveSize`` and ``archivedExpirationInDays`` (rdb.go): every archive write trims the archive to the newest
#: entries below this count, and drops what was archived longer ago than this many seconds.
ASYNQ_ARCHIVE_ENTRIES = 10_000
ASYNQ_ARCHIVE_AGE = 90 * 86_400
