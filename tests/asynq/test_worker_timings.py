"""The asynq worker's timings: asynq's own when taskq's settings leave them unset, the settings' where given."""

from __future__ import annotations

from taskq.queues.engine.settings import TaskqSettings
from taskq.worker.asynq.timings import Timings
from taskq.worker.config import WorkerConfig


def timings(**env: str) -> Timings:
    return Timings.of(WorkerConfig.from_settings(TaskqSettings.from_env(env)))


def test_unset_settings_give_asynq_own_timings() -> None:
    got = timings()
    assert (got.lease, got.heartbeat, got.recoverer, got.clock_skew) == (30.0, 5.0, 60.0, 30.0)
    assert (got.forwarder, got.janitor, got.server_ttl) == (5.0, 8.0, 10.0)


def test_a_shorter_lease_shortens_what_follows_it_and_given_settings_win() -> None:
    got = timings(TASKS_LEASE_SECONDS="2", TASKS_FORWARDER_SECONDS="0.2", TASKS_JANITOR_SECONDS="0.3")
    assert (got.lease, got.recoverer, got.clock_skew, got.forwarder, got.janitor) == (2.0, 4.0, 2.0, 0.2, 0.3)
    assert abs(got.heartbeat - 2 / 6) < 1e-9
    given = timings(TASKS_RECOVERER_SECONDS="0.5", TASKS_CLOCK_SKEW_SECONDS="0.2", TASKS_HEARTBEAT_SECONDS="1")
    assert (given.recoverer, given.clock_skew, given.heartbeat, given.lease) == (0.5, 0.2, 1.0, 30.0)
