"""Daily rollups of the task history, written by the analytics job and read by the console's History page."""

from __future__ import annotations

from django.db import models


class TaskDailyRollup(models.Model):
    """One UTC day x queue x task type. Wait is enqueue (or becoming pending again) -> start; run is start ->
    end of the attempt; both in milliseconds, approximate percentiles (Spark's ``percentile_approx``)."""

    day = models.DateField(db_index=True)
    queue = models.CharField(max_length=128)
    task_type = models.CharField(max_length=256)
    enqueued = models.BigIntegerField(default=0)
    started = models.BigIntegerField(default=0)
    succeeded = models.BigIntegerField(default=0)
    failed = models.BigIntegerField(default=0, help_text="attempts that ended in retry or the archive")
    retried = models.BigIntegerField(default=0)
    archived = models.BigIntegerField(default=0)
    failure_rate = models.FloatField(null=True, help_text="failed / (succeeded + failed)")
    wait_p50_ms = models.FloatField(null=True)
    wait_p95_ms = models.FloatField(null=True)
    wait_p99_ms = models.FloatField(null=True)
    run_p50_ms = models.FloatField(null=True)
    run_p95_ms = models.FloatField(null=True)
    run_p99_ms = models.FloatField(null=True)
    computed_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["day", "queue", "task_type"], name="rollup_per_day_queue_type")]
        ordering = ["day", "queue", "task_type"]

    def __str__(self) -> str:
        return f"{self.day} {self.queue} {self.task_type}"
