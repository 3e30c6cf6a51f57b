"""The data layer against real RQ state: counts per registry after a real worker ran, ranged job lists,
requeue and delete through RQ's API, named errors, and reads that never mutate."""

from __future__ import annotations

from datetime import timedelta

import pytest
import rq_jobs
from rq.job import Job
from rq_support import wait_for

from taskq.console.rq import bridge
from taskq.queues.engine.errors import RedisUnavailableError

pytestmark = pytest.mark.django_db


def counts(name: str = "default") -> dict[str, int]:
    return dict(bridge.rq_queue_summary(name).counts)


def seed_every_registry(queue):
    """Two successes, one failure, one scheduled, one deferred (on the failure), one left queued in "low"."""
    ok = [queue.enqueue(rq_jobs.add, 1, 2), queue.enqueue(rq_jobs.add, 3, 4)]
    failing = queue.enqueue(rq_jobs.explode, "seeded failure")
    scheduled = queue.enqueue_in(timedelta(hours=1), rq_jobs.add, 5, 6)
    deferred = queue.enqueue(rq_jobs.add, 7, 8, depends_on=failing)
    return ok, failing, scheduled, deferred


def test_counts_per_registry_after_a_real_worker(rq_queue, rq_worker):
    ok, failing, scheduled, deferred = seed_every_registry(rq_queue("default"))
    rq_queue("low").enqueue(rq_jobs.add, 0, 0)
    assert counts() == {"queued": 3, "started": 0, "scheduled": 1, "deferred": 1, "finished": 0, "failed": 0}

    rq_worker("default")

    assert counts() == {"queued": 0, "started": 0, "scheduled": 1, "deferred": 1, "finished": 2, "failed": 1}
    summaries = {s.name: s for s in bridge.rq_queue_summaries()}
    assert sorted(summaries) == ["default", "low", "reports/daily"]
    assert summaries["low"].queued == 1 and summaries["reports/daily"].queued == 0
    assert all(s.kind == "rq" for s in summaries.values())

    assert {row.id for row in bridge.rq_jobs("default", "finished").jobs} == {job.id for job in ok}
    assert [row.id for row in bridge.rq_jobs("default", "failed").jobs] == [failing.id]
    assert [row.id for row in bridge.rq_jobs("default", "deferred").jobs] == [deferred.id]
    [row] = bridge.rq_jobs("default", "scheduled").jobs
    assert row.id == scheduled.id and row.scheduled_at is not None

    detail = bridge.rq_job("default", failing.id)
    assert (detail.status, detail.registry, detail.can_requeue) == ("failed", "failed", True)
    assert "seeded failure" in detail.exc_string
    assert detail.func_name == "rq_jobs.explode"
    assert bridge.rq_job("default", ok[0].id).return_value == "3"
    assert bridge.rq_job("default", deferred.id).dependency_ids == [failing.id]


def test_started_job_is_listed_and_cannot_be_deleted(rq_queue, rq_worker, tmp_path):
    marker = tmp_path / "release"
    job = rq_queue().enqueue(rq_jobs.wait_for_marker, str(marker))
    worker = rq_worker("default", wait=False)
    try:
        # RQ lists the job as started a moment before it writes the job's status: wait for both.
        wait_for(
            lambda: counts()["started"] == 1 and job.get_status(refresh=True) == "started", what="the job to start"
        )
        assert [row.id for row in bridge.rq_jobs("default", "started").jobs] == [job.id]
        with pytest.raises(bridge.InvalidJobStateError, match="running"):
            bridge.delete_job("default", job.id)
    finally:
        marker.touch()
    assert worker.wait(timeout=60) == 0
    assert counts()["finished"] == 1 and counts()["started"] == 0


def test_job_list_pages_by_range_in_queue_order(rq_queue):
    ids = [rq_queue().enqueue(rq_jobs.add, i, i).id for i in range(7)]
    pages = [bridge.rq_jobs("default", "queued", page=p, size=3) for p in (1, 2, 3, 4)]
    assert [[row.id for row in page.jobs] for page in pages] == [ids[0:3], ids[3:6], ids[6:7], []]
    assert all(page.total == 7 and page.num_pages == 3 for page in pages)
    assert (pages[0].has_previous, pages[0].has_next, pages[2].has_next) == (False, True, False)
    assert pages[0].jobs[0].description == "rq_jobs.add(0, 0)"


def test_a_job_whose_hash_expired_is_a_missing_row(rq_queue, rq_redis):
    job = rq_queue().enqueue(rq_jobs.add, 1, 1)
    rq_redis.delete(job.key)  # what RQ's TTL does to a job hash while its id is still listed
    [row] = bridge.rq_jobs("default", "queued").jobs
    assert (row.id, row.missing) == (job.id, True)


def test_reads_never_run_rqs_registry_cleanup(rq_queue, rq_redis):
    queue = rq_queue()
    job = queue.enqueue(rq_jobs.add, 1, 1)
    queue.failed_job_registry.add(job, ttl=-5)  # an entry past its expiry: RQ's cleanup would drop it
    before = sorted(rq_redis.zrange(queue.failed_job_registry.key, 0, -1))
    assert counts()["failed"] == 1
    bridge.rq_queue_summaries()
    bridge.rq_jobs("default", "failed")
    assert sorted(rq_redis.zrange(queue.failed_job_registry.key, 0, -1)) == before


def test_requeue_failed_runs_again_with_the_real_worker(rq_queue, rq_worker, tmp_path):
    marker = tmp_path / "fixed"
    job = rq_queue().enqueue(rq_jobs.fail_until_marker, str(marker))
    rq_worker("default")
    assert counts()["failed"] == 1

    marker.touch()
    assert bridge.requeue_failed("default", job.id) == job.id
    assert counts()["failed"] == 0 and counts()["queued"] == 1
    with pytest.raises(bridge.InvalidJobStateError, match="not in the failed registry"):
        bridge.requeue_failed("default", job.id)  # a second click, or a second operator

    rq_worker("default")
    assert counts()["finished"] == 1
    assert Job.fetch(job.id, connection=rq_queue().connection).return_value() == "recovered"


@pytest.mark.parametrize("registry", ["queued", "failed", "scheduled", "deferred"])
def test_delete_removes_the_job_from_its_registry(rq_queue, rq_worker, registry):
    _ok, failing, scheduled, deferred = seed_every_registry(rq_queue())
    if registry != "queued":
        rq_worker("default")
    target = {"queued": failing, "failed": failing, "scheduled": scheduled, "deferred": deferred}[registry]
    assert target.id in {row.id for row in bridge.rq_jobs("default", registry).jobs}

    assert bridge.delete_job("default", target.id) == registry

    assert target.id not in {row.id for row in bridge.rq_jobs("default", registry).jobs}
    with pytest.raises(bridge.JobNotFoundError):
        bridge.rq_job("default", target.id)


def test_named_errors_for_bad_input(rq_queue):
    job = rq_queue("low").enqueue(rq_jobs.add, 1, 1)
    with pytest.raises(bridge.UnknownQueueError, match="nope"):
        bridge.rq_jobs("nope", "queued")
    with pytest.raises(bridge.UnknownRegistryError, match="expected one of"):
        bridge.rq_jobs("default", "archived")
    for page, size in [(0, 10), (1, 0), (1, bridge.MAX_PAGE_SIZE + 1)]:
        with pytest.raises(bridge.InvalidPageError):
            bridge.rq_jobs("default", "queued", page, size)
    for bad_id in ["x" * 10_000, f"{job.id}:execution", "../etc", ""]:
        with pytest.raises(bridge.JobNotFoundError):
            bridge.rq_job("low", bad_id)
    with pytest.raises(bridge.JobNotFoundError, match='belongs to "low"'):
        bridge.requeue_failed("default", job.id)
    with pytest.raises(bridge.InvalidJobStateError, match="status queued"):
        bridge.requeue_failed("low", job.id)
    assert bridge.UnknownQueueError("m", op="rq.x").code == "queue_not_found"
    assert str(bridge.UnknownQueueError("m", op="rq.x")) == "rq.x: m"


def test_redis_down_is_the_engines_unavailable_error(settings):
    settings.RQ_QUEUES = {"default": {"URL": "redis://127.0.0.1:1/5"}}
    with pytest.raises(RedisUnavailableError, match="RQ's Redis cannot be reached") as info:
        bridge.rq_queue_summaries()
    assert info.value.op == "rq.queue_summaries"
    with pytest.raises(RedisUnavailableError):
        bridge.requeue_failed("default", "abc")


def test_no_rq_queues_configured(settings):
    settings.RQ_QUEUES = {}
    assert bridge.rq_queue_summaries() == []
