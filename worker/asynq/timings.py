"""How often the asynq worker's loops run, and how long its leases are: asynq's own timings by default, or
shorter ones through taskq's settings (``TASKS_LEASE_SECONDS``, ``TASKS_HEARTBEAT_SECONDS``...), so tests need not
wait for Go's minute-long recoverer.

asynq fixes a 30 s lease extended every 5 s, a recoverer that runs every minute and leaves a lease alone for 30 s
after its expiry (clock skew between machines), a forwarder every 5 s and a janitor every 8 s. Where a setting is
left unset, the timing follows the lease the way asynq's follow its 30 s, so a shorter lease shortens the rest.
"""

from __future__ import annotations

from dataclasses import dataclass

from taskq.queues.engine.asynq.limits import ASYNQ_FORWARDER, ASYNQ_JANITOR, ASYNQ_LEASE
from taskq.queues.engine.settings import DEFAULTS
from taskq.worker.config import WorkerConfig


@dataclass(frozen=True)
class Timings:
    lease: float = ASYNQ_LEASE
    heartbeat: float = ASYNQ_LEASE / 6
    recoverer: float = 2 * ASYNQ_LEASE
    clock_skew: float = ASYNQ_LEASE
    forwarder: float = ASYNQ_FORWARDER
    janitor: float = ASYNQ_JANITOR
    idle_wait: float = 1.0  # asynq's TaskCheckInterval: how long the fetch loop sleeps when every queue is empty

    @classmethod
    def of(cls, config: WorkerConfig) -> Timings:
        """The timings of a worker configured by taskq's settings: a setting given wins; one left at taskq's
        default takes asynq's value (scaled to the lease where asynq's follows its lease)."""
        lease = config.lease_seconds
        forwarder = config.forwarder_interval
        janitor = config.janitor_interval
        return cls(
            lease=lease,
            heartbeat=config.heartbeat_interval or lease / 6,
            recoverer=config.recoverer_interval or 2 * lease,
            clock_skew=lease if config.clock_skew is None else config.clock_skew,
            forwarder=ASYNQ_FORWARDER if forwarder == DEFAULTS.forwarder_seconds else forwarder,
            janitor=ASYNQ_JANITOR if janitor == DEFAULTS.janitor_seconds else janitor,
            idle_wait=config.idle_wait,
        )

    @property
    def server_ttl(self) -> float:
        """How long a heartbeat's ServerInfo and WorkerInfo live: two beats, as asynq's heartbeater writes them."""
        return 2 * self.heartbeat
