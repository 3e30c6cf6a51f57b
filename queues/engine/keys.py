"""Every Redis key name the engine uses, built in one place.

Per-queue keys carry the queue name as a Redis Cluster hash tag (``{queue}``) so that all keys of a queue
live in one slot and every Lua script touches a single slot. Queue names may not contain ``{`` or ``}``
(see ``validation``), which keeps the tag unambiguous and makes every key decompose uniquely.

It deliberately shares its name with ``queues/engine/asynq/keys.py``, which does the same over Go asynq's keys.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cached_property, lru_cache

from .settings import DEFAULTS

DEFAULT_PREFIX = DEFAULTS.key_prefix  # TASKS_KEY_PREFIX's default

#: States a task can be in. ``active`` tasks are the members of the queue's lease set; ``waiting`` ones wait for
#: their dependencies (see workflows.py).
STATES = ("pending", "active", "scheduled", "retry", "archived", "completed", "aggregating", "waiting")


@dataclass(frozen=True)
class QueueKeys:
    """Key names of one queue."""

    prefix: str
    queue: str

    @cached_property
    def base(self) -> str:
        """What every key of the queue starts with; built once per QueueKeys (``Keys.queue`` hands out the same
        one for a queue), since every enqueue and acknowledgement asks for several of the queue's keys."""
        return f"{self.prefix}:{{{self.queue}}}:"

    @property
    def task_prefix(self) -> str:
        """Prefix of task hashes; Lua scripts append the task id to it."""
        return self.base + "t:"

    def task(self, task_id: str) -> str:
        return self.task_prefix + task_id

    @property
    def pending(self) -> str:
        return self.base + "pending"

    @property
    def lease(self) -> str:
        """Sorted set of active task ids scored by lease expiry (ms); it is the queue's active set."""
        return self.base + "lease"

    @property
    def scheduled(self) -> str:
        return self.base + "scheduled"

    @property
    def retry(self) -> str:
        return self.base + "retry"

    @property
    def archived(self) -> str:
        return self.base + "archived"

    @property
    def completed(self) -> str:
        return self.base + "completed"

    @property
    def paused(self) -> str:
        return self.base + "paused"

    @property
    def starts(self) -> str:
        """Sorted set of the queue's recent starts (``<task id>@<lease token>`` -> start time, ms): the sliding-window
        log of its rate limit, written by ``lua/dequeue.lua`` only while the queue has one."""
        return self.base + "starts"

    @property
    def events(self) -> str:
        """Capped stream of every transition in this queue."""
        return self.base + "events"

    @property
    def event_offset(self) -> str:
        """Hash ``committed`` (the exporter's last exported stream id) and ``cap`` (hard length cap). While it
        exists, scripts trim the stream by MINID at ``committed`` instead of MAXLEN (see ``lua/_lib.lua``, which
        derives this name from the stream's; tests/engine/test_lua_key_names.py checks the two agree)."""
        return self.events + ":exporter"

    @property
    def type_counts(self) -> str:
        """Hash ``<state>:<type>`` -> count, plus ``processed:<type>`` and ``failed:<type>`` totals."""
        return self.base + "types"

    @property
    def processed(self) -> str:
        return self.base + "processed"

    @property
    def failed(self) -> str:
        return self.base + "failed"

    def processed_on(self, day: str) -> str:
        return f"{self.base}processed:{day}"

    def failed_on(self, day: str) -> str:
        return f"{self.base}failed:{day}"

    @property
    def unique_prefix(self) -> str:
        return self.base + "unique:"

    def unique(self, task_type: str, digest: str) -> str:
        return f"{self.unique_prefix}{task_type}:{digest}"

    def barrier(self, call_id: str) -> str:
        """Set while the calls of one ``enqueue_many`` sent behind a refused one must be refused too (see
        ``lua/enqueue.lua``); expires after a minute."""
        return f"{self.base}barrier:{call_id}"

    @property
    def errors(self) -> str:
        """Hash of the queue's error groups: count, first seen, latest task and label per ``<fingerprint>|<type>``
        (see ``failures`` and ``record_failure`` in ``lua/_lib.lua``)."""
        return self.base + "errors"

    @property
    def errors_seen(self) -> str:
        """Sorted set of the queue's error groups (``<fingerprint>|<type>``), scored by when last seen (ms)."""
        return self.base + "errors:seen"

    def series(self, resolution: str, index: int) -> str:
        """Hash of one minute (``m``) or hour (``h``) of the queue's time series, by epoch minute or hour (see
        ``series``)."""
        return f"{self.base}series:{resolution}:{index}"

    @property
    def cron_last(self) -> str:
        """Hash periodic entry id -> the last tick (ms) handled for it; in the queue's slot, so the script that
        enqueues a tick checks and moves it in the same step (see ``lua/fire_tick.lua``)."""
        return self.base + "cron:last"

    def cron_history(self, entry_id: str) -> str:
        """Sorted set of one periodic entry's runs (JSON: tick, task, enqueued at, outcome, and once the run ended
        when and how long it ran), scored by tick (ms), capped. ``cron_run_ended`` in ``lua/_lib.lua`` builds the
        same name from a run's task id to record its outcome."""
        return f"{self.base}cron:history:{entry_id}"

    @property
    def cron_paused(self) -> str:
        """Hash periodic entry id -> JSON of its pause (when, by whom); in the queue's slot, so ``fire_tick``
        checks it in the step that would enqueue."""
        return self.base + "cron:paused"

    # -- groups (aggregation) and dependencies (workflows); see lua/_lib.lua for the layout -------------------------

    @property
    def groups(self) -> str:
        """Set of the names of the queue's groups that hold aggregating tasks."""
        return self.base + "groups"

    def group(self, name: str) -> str:
        """Sorted set of one group's aggregating task ids, scored by enqueue time (ms)."""
        return f"{self.base}g:{name}"

    @property
    def aggregation_sets(self) -> str:
        """Sorted set of aggregation sets in progress (``<set id>:<group>``), scored by their deadline (ms)."""
        return self.base + "aggregation_sets"

    def aggregation_set(self, set_id: str) -> str:
        """Sorted set of the task ids one cut took from a group (scores kept, for a reclaim)."""
        return f"{self.base}agg:{set_id}"

    @property
    def waiting(self) -> str:
        """Sorted set of tasks waiting for their dependencies, scored by submit time (ms)."""
        return self.base + "waiting"

    def dependents(self, task_id: str) -> str:
        """Set of the ids waiting for ``task_id`` to succeed (built in Lua as ``deps:<id>`` too)."""
        return f"{self.base}deps:{task_id}"

    def workflow(self, workflow_id: str) -> str:
        """Hash of one workflow: state, members, per-member outcome and result (built in Lua as ``wf:<id>``)."""
        return f"{self.base}wf:{workflow_id}"

    @property
    def workflows(self) -> str:
        """Sorted set of workflow ids, scored by creation time (ms)."""
        return self.base + "workflows"

    def task_record(self, task_id: str) -> str:
        """JSON record of a deleted task an operator had acted on (its end, failures and actions), with a TTL
        (built in Lua as ``rec:<id>``; see ``leave_record`` in ``lua/_lib.lua`` and ``task_records.py``)."""
        return f"{self.base}rec:{task_id}"

    def state_key(self, state: str) -> str:
        """The structure holding tasks of ``state`` (the lease set for active)."""
        return self.lease if state == "active" else self.base + state


@dataclass(frozen=True)
class Keys:
    """Global keys and a factory for per-queue keys."""

    prefix: str = DEFAULT_PREFIX
    #: On a Redis Cluster the global keys carry the prefix as their hash tag (``{tq}:queues``), so they share one
    #: slot and the MULTIs that write several of them together (server heartbeat, config hashes and their
    #: version) stay legal. Per-queue keys are the same on every topology.
    cluster: bool = False

    @property
    def scope(self) -> str:
        """What global key names start with: the prefix, or on a cluster the prefix as a hash tag."""
        return f"{{{self.prefix}}}" if self.cluster else self.prefix

    def queue(self, name: str) -> QueueKeys:
        return _queue_keys(self.prefix, name)

    def queue_of_pending(self, key: str) -> str | None:
        """The queue whose pending list (and wake-up channel) is ``key``, the inverse of ``queue(q).pending``;
        None for any other key."""
        head, tail = f"{self.prefix}:{{", "}:pending"
        if len(key) > len(head) + len(tail) and key.startswith(head) and key.endswith(tail):
            return key[len(head) : -len(tail)]
        return None

    @property
    def queues(self) -> str:
        """Set of all known queue names (global: written outside the per-queue scripts)."""
        return f"{self.scope}:queues"

    @property
    def layout(self) -> str:
        """String: the version of the key and message layout the keyspace holds (see ``layout``)."""
        return f"{self.scope}:layout"

    @property
    def api_consumed(self) -> str:
        """Hash: queue -> when the HTTP API's consume endpoint last polled it (ms), written at most every few
        seconds per queue and process (``RemoteConsumer``); a queue polled lately is served (``serving``)."""
        return f"{self.scope}:api:consumed"

    @property
    def servers(self) -> str:
        """Sorted set of server ids scored by the expiry of their last heartbeat (ms)."""
        return f"{self.scope}:servers"

    def server(self, server_id: str) -> str:
        return f"{self.scope}:server:{server_id}"

    def control(self, server_id: str) -> str:
        """String: what an operator asked of one server (``quiet`` or ``stop``); read by its heartbeat."""
        return f"{self.scope}:control:{server_id}"

    def workers(self, server_id: str) -> str:
        """Hash task id -> JSON of what one server is running right now."""
        return f"{self.scope}:workers:{server_id}"

    def control_channel(self, server_id: str, db: int = 0) -> str:
        """Pub/sub channel on which an operator's quiet or stop reaches one server at once (the ``control`` key
        stays, for a server that was not listening at that moment). Names the database, as ``cancel_channel``."""
        return f"{self.scope}:control:{db}:{server_id}"

    def control_ack(self, server_id: str) -> str:
        """String: JSON of the last request one server acted on (``{"action": "quiet", "at": ms}``), which
        ``tasks server quiet|stop`` and the console wait for; kept after the server has gone."""
        return f"{self.scope}:control_ack:{server_id}"

    def ended_server(self, server_id: str) -> str:
        """Hash: the record of a server that stopped or was lost. ``server`` = JSON of its last heartbeat with how
        and when it ended; ``task:<JSON [queue, id]>`` = JSON of what became of each task it held. Expires."""
        return f"{self.scope}:ended_server:{server_id}"

    @property
    def ended_servers(self) -> str:
        """Sorted set of the ids of servers that stopped or were lost, scored by when they ended (ms)."""
        return f"{self.scope}:ended_servers"

    def series(self, resolution: str, index: int) -> str:
        """Hash of one minute or hour of every queue's successes and failures (see ``series``)."""
        return f"{self.scope}:series:{resolution}:{index}"

    @property
    def export_lease(self) -> str:
        """String: the id of the one exporter allowed to run, with a TTL (its lease)."""
        return f"{self.scope}:exporter:lease"

    @property
    def export_status(self) -> str:
        """Hash: gaps detected (``gaps``, ``gap:<queue>`` = JSON of the last one), the holder's heartbeat."""
        return f"{self.scope}:exporter:status"

    @property
    def config_queues(self) -> str:
        """Hash queue name -> JSON of its definition (weight, rank, concurrency cap, rate limit), mirrored from the
        admin."""
        return f"{self.scope}:config:queues"

    @property
    def config_unique(self) -> str:
        """Hash task-type prefix -> default unique TTL in seconds."""
        return f"{self.scope}:config:unique"

    @property
    def config_retention(self) -> str:
        """Hash JSON ``[queue, type prefix]`` -> JSON of the retention and archive limits of that rule."""
        return f"{self.scope}:config:retention"

    @property
    def config_version(self) -> str:
        """Counter bumped with every write of the config hashes; readers re-read them when it changes."""
        return f"{self.scope}:config:version"

    @property
    def schedulers(self) -> str:
        """Sorted set of scheduler ids scored by the expiry of their last heartbeat (ms)."""
        return f"{self.scope}:schedulers"

    def scheduler(self, scheduler_id: str) -> str:
        """JSON of one scheduler and the entries it runs, expiring unless its heartbeat renews it."""
        return f"{self.scope}:scheduler:{scheduler_id}"

    @property
    def config_periodic(self) -> str:
        """Hash entry id -> JSON of a periodic task defined in the admin, mirrored from the database."""
        return f"{self.scope}:config:periodic"

    @property
    def config_periodic_version(self) -> str:
        """Counter bumped with every write of ``config_periodic``; schedulers re-read the hash when it moves."""
        return f"{self.scope}:config:periodic:version"

    def cancel_channel(self, db: int = 0) -> str:
        """Pub/sub ignores database numbers, so the channel names the database: a cancel meant for one
        database must not reach the workers of another that happen to run a task with the same id."""
        return f"{self.scope}:cancel:{db}"


def cancel_message(queue: str, task_id: str) -> str:
    """What is published on the cancel channel: task ids are unique within a queue only, so both go."""
    return json.dumps([queue, task_id])


def cancel_request(data: bytes | str) -> tuple[str, str]:
    """The (queue, task id) of a cancel message; ("", "") for one this version cannot read."""
    try:
        queue, task_id = json.loads(data)
        return str(queue), str(task_id)
    except (ValueError, TypeError):
        return "", ""


#: The QueueKeys of a (prefix, queue), made once: a queue's key names never change, and the hot paths ask for them
#: on every call.
_queue_keys = lru_cache(maxsize=4096)(QueueKeys)
