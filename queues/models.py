"""Queue definitions, unique-key and retention policies, and the operators' audit log.

Definitions and policies are mirrored into Redis whenever one is saved or deleted (``taskq.queues.signals``), so the
Django-free client and the workers apply them without a database.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.utils import timezone

from .engine import ValidationError as EngineValidationError
from .engine import validation as check
from .engine.cron import parse, time_zone
from .engine.periodic import check_options, make_entry
from .token_scopes import allows, clean_scopes

MAX_SECONDS = int(check.MAX_DURATION)


def validate_queue_name(value: str) -> None:
    """A queue the admin defines (a queue definition, a retention rule, a periodic task) is named as a new task's
    queue is (``validation.new_queue_name``): tasks will be enqueued to it, and workers serve it by name."""
    try:
        check.new_queue_name(value)
    except EngineValidationError as exc:
        raise ValidationError(exc.message) from None


def validate_type_pattern(value: str) -> None:
    try:
        check.task_type(value)
    except EngineValidationError as exc:
        raise ValidationError(exc.message.replace("task type", "task type pattern")) from None


def seconds_field(verbose_name: str, help_text: str, **options: Any) -> models.PositiveIntegerField:
    validators = [MaxValueValidator(MAX_SECONDS), *options.pop("validators", [])]
    return models.PositiveIntegerField(verbose_name, help_text=help_text, validators=validators, **options)


def type_pattern_field(help_text: str, **options: Any) -> models.CharField:
    return models.CharField(
        max_length=check.MAX_TYPE_NAME, validators=[validate_type_pattern], help_text=help_text, **options
    )


def optional_count_field(most: int, help_text: str) -> models.PositiveIntegerField:
    """A count from 0 to ``most`` that may be left blank (blank: the default applies)."""
    return models.PositiveIntegerField(null=True, blank=True, validators=[MaxValueValidator(most)], help_text=help_text)


class QueueDefinition(models.Model):
    """A queue that workers started without ``--queues`` serve, with its weight and priority."""

    name = models.CharField(max_length=check.MAX_QUEUE_NAME, unique=True, validators=[validate_queue_name])
    weight = models.PositiveIntegerField(
        default=1,
        validators=[MinValueValidator(1), MaxValueValidator(1000)],
        help_text="1-1000: a queue of weight 6 is tried first six times as often as one of weight 1.",
    )
    rank = models.IntegerField(
        "strict-priority rank",
        default=0,
        help_text="With taskworker --strict: lower ranks are always served first (ties by weight).",
    )
    description = models.TextField(blank=True)
    concurrency_cap = models.PositiveIntegerField(
        default=0,
        validators=[MaxValueValidator(1_000_000)],
        help_text="Most tasks of this queue running at once across all workers; 0 means no cap.",
    )
    # Rate limit: at most rate_limit tasks of this queue started in any rate_period seconds, across all workers.
    rate_limit = models.PositiveIntegerField(
        default=0,
        validators=[MaxValueValidator(1_000_000)],
        help_text="Most tasks of this queue started per rate period across all workers; 0 means no limit. Tasks "
        "over the limit wait in pending.",
    )
    rate_period = models.PositiveIntegerField(
        "rate period (seconds)",
        default=1,
        validators=[MinValueValidator(1), MaxValueValidator(86_400)],
        help_text="The window of the rate limit, in seconds (1 to 86400).",
    )
    # Group aggregation (asynq's groups); blank: the worker's defaults (TASKS_GROUP_* settings).
    group_grace_period = seconds_field(
        "group grace period (seconds)",
        "A group is combined once no task joined it for this long. Blank: the TASKS_GROUP_GRACE_SECONDS default.",
        null=True,
        blank=True,
    )
    group_max_delay = seconds_field(
        "group max delay (seconds)",
        "A group is combined once its oldest task waited this long; 0: no limit. "
        "Blank: the TASKS_GROUP_MAX_DELAY_SECONDS default.",
        null=True,
        blank=True,
    )
    group_max_size = optional_count_field(
        1_000_000,
        "A group is combined once it holds this many tasks (and one combined task takes at most this many); "
        "0: no limit. Blank: the TASKS_GROUP_MAX_SIZE default.",
    )

    class Meta:
        ordering = ["rank", "-weight", "name"]

    def __str__(self) -> str:
        return str(self.name)


class UniquePolicy(models.Model):
    """Tasks whose type starts with ``type_pattern`` are unique for ``ttl`` seconds unless the producer says
    otherwise. The longest matching pattern wins, as in handler routing."""

    type_pattern = type_pattern_field("A task-type prefix, e.g. 'email:' or 'invoice:send'.", unique=True)
    ttl = seconds_field(
        "unique TTL (seconds)", "How long a twin (same type and payload) is refused.", validators=[MinValueValidator(1)]
    )

    class Meta:
        ordering = ["type_pattern"]
        verbose_name_plural = "unique policies"

    def __str__(self) -> str:
        return f"{self.type_pattern}* unique for {self.ttl} s"


class RetentionPolicy(models.Model):
    """Default completed retention and archive limits. For each value, the most specific rule that sets it wins:
    queue and type, then queue, then type, then the default rule (both blank)."""

    queue = models.CharField(
        max_length=check.MAX_QUEUE_NAME, blank=True, validators=[validate_queue_name], help_text="Blank: any queue."
    )
    type_pattern = type_pattern_field("A task-type prefix; blank: any type.", blank=True)
    completed_retention = seconds_field(
        "completed retention (seconds)",
        "How long a succeeded task is kept, with its result. Blank: inherit.",
        null=True,
        blank=True,
    )
    archive_max_size = optional_count_field(
        100_000_000, "Most archived tasks kept in the queue. Blank: inherit. Queue and default rules only."
    )
    archive_max_age = seconds_field(
        "archive max age (seconds)",
        "Archived tasks older than this are deleted. Blank: inherit. Queue and default rules only.",
        null=True,
        blank=True,
    )

    class Meta:
        ordering = ["queue", "type_pattern"]
        verbose_name_plural = "retention policies"
        constraints = [models.UniqueConstraint(fields=["queue", "type_pattern"], name="one_rule_per_queue_and_type")]

    def clean(self) -> None:
        if self.type_pattern and (self.archive_max_size is not None or self.archive_max_age is not None):
            raise ValidationError(
                "Archive limits apply to a whole queue (the archive is per queue): leave them "
                "blank on a rule with a task type."
            )
        if self.completed_retention is None and self.archive_max_size is None and self.archive_max_age is None:
            raise ValidationError("Set at least one of completed retention, archive max size, archive max age.")

    def __str__(self) -> str:
        return f"queue {self.queue or '*'}, type {self.type_pattern or '*'}"


class AuditLog(models.Model):
    """Who did what to which queue and tasks, from the console or the admin. Also carries the console's custom
    permissions (viewer: view_console; operator: operate_console)."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="task_audit_entries"
    )
    username = models.CharField(max_length=150, blank=True)  # kept when the user is deleted
    action = models.CharField(max_length=64, db_index=True)
    queue = models.CharField(max_length=check.MAX_QUEUE_NAME, blank=True, db_index=True)
    task_ids = models.JSONField(default=list, blank=True)  # the first AUDIT_TASK_IDS of the tasks acted on
    task_count = models.PositiveIntegerField(default=0)  # how many tasks it acted on, all of them
    detail = models.TextField(blank=True)  # what the actor was allowed to see: payloads masked by TASKS_REDACT
    # The detail with the payloads in full, kept only with TASKS_AUDIT_UNREDACTED, for an edited task with masked
    # values; shown nowhere but the admin's "Show unredacted original" (taskq.view_unredacted, each read audited).
    unredacted_detail = models.TextField(blank=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        permissions = [
            ("view_console", "Can view the task console"),
            ("operate_console", "Can act on queues and tasks in the task console"),
            ("view_unredacted", "Can see redacted task payloads and results in full"),
            ("edit_task", "Can edit a retry or archived task's payload and options and run it"),
            ("create_task", "Can create a task from the console"),
        ]

    def __str__(self) -> str:
        return f"{self.username or 'anonymous'} {self.action} {self.queue}".strip()

    @property
    def when(self) -> str:
        """When it happened: ISO 8601 to the second, with the zone (``2026-11-25T21:52:01+00:00``)."""
        return str(timezone.localtime(self.created_at).isoformat(timespec="seconds"))

    @property
    def tasks_shown(self) -> str:
        """The task ids it keeps, and how many more it acted on (``a, b … and 998 more``)."""
        ids = ", ".join(self.task_ids or [])
        more = self.task_count - len(self.task_ids or [])
        if more <= 0:
            return ids
        return f"{ids} … and {more} more" if ids else f"{more} task{'s' if more != 1 else ''}"


class Tasks(models.Model):
    """No table: the admin's entry for browsing and acting on the tasks in Redis (/admin/taskq/tasks/)."""

    class Meta:
        managed = False
        default_permissions = ()
        verbose_name = "task"
        verbose_name_plural = "tasks"


class ApiToken(models.Model):
    """A bearer token of the HTTP API (``/api/v1/``), scoped to queues. Only a SHA-256 of the secret is stored,
    with its first characters to tell tokens apart; the secret is shown once, when the token is created."""

    name = models.CharField(max_length=100, unique=True)
    prefix = models.CharField(max_length=16, editable=False, help_text="The token's first characters.")
    secret_hash = models.CharField(max_length=64, unique=True, editable=False)
    queues = models.JSONField(
        default=list, blank=True, help_text='Queue names this token may use; "*" means every queue.'
    )
    namespaces = models.JSONField(
        default=list,
        blank=True,
        help_text='Namespaces this token may use: namespace "shop" covers every queue named "shop:<anything>".',
    )
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True, editable=False)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["name"]
        verbose_name = "API token"

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    def clean(self) -> None:
        self.queues, self.namespaces = clean_scopes(self.queues, self.namespaces)

    def allows(self, queue: str) -> bool:
        return allows(self.queues, self.namespaces, queue)


def _engine_check(check: Any, value: Any) -> None:
    try:
        check(value)
    except EngineValidationError as exc:
        raise ValidationError(exc.message) from None


def validate_time_zone(value: str) -> None:
    _engine_check(time_zone, value)


def validate_periodic_options(value: Any) -> None:
    _engine_check(check_options, value)


class PeriodicTask(models.Model):
    """A periodic task defined in the admin: enqueued at every tick of its schedule by ``manage.py taskscheduler``.
    Enabled entries are mirrored into Redis on save and delete, and running schedulers follow them without a
    restart."""

    MISSED_CHOICES = [("skip", "skip missed ticks"), ("run_once", "run once for all missed ticks")]

    name = models.CharField(max_length=200, unique=True)
    spec = models.CharField(
        "schedule",
        max_length=256,
        help_text="Five-field cron (minute hour day-of-month month day-of-week, e.g. '*/5 * * * *' or "
        "'30 7 * * mon-fri'), a macro (@hourly, @daily, @weekly, @monthly, @yearly) or '@every 30s'.",
    )
    timezone = models.CharField(
        "time zone",
        max_length=64,
        default="UTC",
        validators=[validate_time_zone],
        help_text="IANA name, e.g. Europe/Paris; cron fields are read on its wall clock.",
    )
    task_type = models.CharField(max_length=check.MAX_TYPE_NAME)
    payload = models.JSONField(default=dict, blank=True, help_text="Any JSON value; stored as compact JSON.")
    queue = models.CharField(max_length=check.MAX_QUEUE_NAME, default="default", validators=[validate_queue_name])
    options = models.JSONField(
        default=dict,
        blank=True,
        validators=[validate_periodic_options],
        help_text='Enqueue options: {"max_retry": 3, "timeout": 60, "retention": 3600, "unique": 300, "headers": {}}.',
    )
    missed = models.CharField(
        "missed ticks",
        max_length=16,
        choices=MISSED_CHOICES,
        default="skip",
        help_text="What a scheduler does with ticks that passed while no scheduler ran.",
    )
    enabled = models.BooleanField(default=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return f"{self.name} ({self.spec})"

    def entry(self) -> Any:
        """The engine's entry for this row. Raises the engine's ValidationError."""
        return make_entry(
            self.spec,
            self.task_type,
            self.payload,
            queue=self.queue,
            tz=self.timezone,
            missed=self.missed,
            options=self.options,
            source="admin",
            name=self.name,
        )

    def clean(self) -> None:
        errors: dict[str, str] = {}
        try:
            parse(self.spec, "UTC")
        except EngineValidationError as exc:
            errors["spec"] = exc.message
        try:
            check.task_type(self.task_type)
        except EngineValidationError as exc:
            errors["task_type"] = exc.message
        if errors:
            raise ValidationError(errors)
        try:
            self.entry()
        except EngineValidationError as exc:
            raise ValidationError(exc.message) from None
