"""State tables of what a failed attempt leaves beside its retry or archive (``record_failure`` in lua/_lib.lua):
the traceback in the task's hash, and its error group in the queue's ``errors`` hash and ``errors:seen`` index,
bounded in number and age. The rest of those transitions is in test_scripts_worker."""

from __future__ import annotations

from taskq.queues.engine import Limits
from taskq.queues.engine.failures import Failure

from .dbstate import Hash, Stream, Volatile, ZSet, hash_with
from .script_runs import Case, cases, run_case
from .task_state import DAY, NOW, NOW_MS, Q, counts, event
from .test_scripts_worker import ACTIVE_A, COUNTED, W

FAILURE = Failure("ValueError", "card 42 declined", "shop.tasks:charge", "Traceback ...\nValueError: card 42\n")
FP = FAILURE.fingerprint
GROUP = f"{FP}|email"
OTHER = "0123456789abcdef|email"
OLD = "fedcba9876543210|sms"
KEY_FAILURE = Failure("KeyError", "'sku'", "shop.tasks:charge", "tb")
KEY_GROUP = f"{KEY_FAILURE.fingerprint}|email"
DAY_MS = 86_400_000


def retry(failure: Failure | None = FAILURE, *, is_failure: bool = True, expired_before: float | None = None):
    return lambda t: t.retry(
        "default", "a", "tok-1", NOW + 10, "boom", worker=W, is_failure=is_failure, expired_before=expired_before,
        failure=failure,
    )  # fmt: skip


def archive(failure: Failure | None = FAILURE):
    return lambda t: t.archive("default", "a", "tok-1", "boom", worker=W, failure=failure)


def group(member: str, n: int, first: int, sample: str, label: str = FAILURE.label) -> dict[str, str]:
    return {f"n|{member}": str(n), f"f|{member}": str(first), f"s|{member}": sample, f"d|{member}": label}


def retried(**fields: str) -> dict:
    """The task after a failed attempt that goes to retry, with ``fields`` (traceback, fp) in its hash."""
    return {
        Q.task("a"): hash_with(
            ACTIVE_A[Q.task("a")], drop=("lease",), state="retry", since=NOW_MS, error="boom", failed_at=NOW_MS,
            ran_ms="", retried=1, **fields,
        ),
        Q.retry: ZSet({"a": NOW_MS + 10_000}),
        ACTIVE_A_UNIQUE: Volatile("a"),
        Q.type_counts: counts(active__email=0, retry__email=1, processed__email=1, failed__email=1),
        Q.processed: "6", Q.processed_on(DAY): Volatile("6"), Q.failed: "3", Q.failed_on(DAY): Volatile("3"),
        Q.events: Stream([event("a", "active", "retry", worker=W, error="boom")]),
    }  # fmt: skip


ACTIVE_A_UNIQUE = next(k for k, v in ACTIVE_A.items() if isinstance(v, Volatile))
STORED = {"traceback": FAILURE.traceback, "fp": FP}
SEEN_BEFORE = {  # the group was seen an hour ago by task "old1", and another group of the queue too
    Q.errors: Hash(group(GROUP, 4, NOW_MS - 7_200_000, "old1") | group(OTHER, 1, NOW_MS - 60_000, "b")),
    Q.errors_seen: ZSet({GROUP: NOW_MS - 3_600_000, OTHER: NOW_MS - 60_000}),
}


@cases(
    Case(
        "a new group: counted once, first and last seen now, this task its sample",
        ACTIVE_A | COUNTED,
        retry(),
        after=retried(**STORED) | {Q.errors: Hash(group(GROUP, 1, NOW_MS, "a")), Q.errors_seen: ZSet({GROUP: NOW_MS})},
    ),
    Case(
        "a known group: counted, first seen kept, last seen and sample moved",
        ACTIVE_A | COUNTED | SEEN_BEFORE,
        retry(),
        after=retried(**STORED)
        | {
            Q.errors: Hash(group(GROUP, 5, NOW_MS - 7_200_000, "a") | group(OTHER, 1, NOW_MS - 60_000, "b")),
            Q.errors_seen: ZSet({GROUP: NOW_MS, OTHER: NOW_MS - 60_000}),
        },
    ),
    Case(
        "an error that is no failure keeps its traceback and joins no group",
        ACTIVE_A | COUNTED | {Q.task("a"): hash_with(ACTIVE_A[Q.task("a")], fp=FP)},
        retry(is_failure=False),
        after=retried(traceback=FAILURE.traceback)
        | COUNTED
        | {
            Q.task("a"): hash_with(
                ACTIVE_A[Q.task("a")],
                drop=("lease",),
                state="retry",
                since=NOW_MS,
                error="boom",
                failed_at=NOW_MS,
                ran_ms="",
                traceback=FAILURE.traceback,
            ),
            Q.type_counts: counts(active__email=0, retry__email=1),
        },  # fmt: skip
    ),
    Case(
        "recoverer: an expired lease has no traceback; an earlier one is dropped, the groups are left",
        ACTIVE_A
        | COUNTED
        | SEEN_BEFORE
        | {Q.task("a"): hash_with(ACTIVE_A[Q.task("a")], traceback="old", fp=FP), Q.lease: ZSet({"a": NOW_MS - 1})},
        retry(None, expired_before=NOW),
        after=retried() | SEEN_BEFORE,
    ),
    Case(
        "over the cap: the least recently seen group goes",
        ACTIVE_A | COUNTED | SEEN_BEFORE,
        retry(KEY_FAILURE),
        limits=Limits(error_groups_max=2),
        after=retried(traceback="tb", fp=KEY_FAILURE.fingerprint)
        | {
            Q.errors: Hash(group(OTHER, 1, NOW_MS - 60_000, "b") | group(KEY_GROUP, 1, NOW_MS, "a", KEY_FAILURE.label)),
            Q.errors_seen: ZSet({OTHER: NOW_MS - 60_000, KEY_GROUP: NOW_MS}),
        },
    ),
    Case(
        "unseen for the max age: a group goes, whatever the cap",
        ACTIVE_A
        | COUNTED
        | {
            Q.errors: Hash(group(OLD, 9, NOW_MS - 3 * DAY_MS, "z")),
            Q.errors_seen: ZSet({OLD: NOW_MS - 2 * DAY_MS}),
        },
        retry(),
        limits=Limits(error_groups_max_age=86_400.0),
        after=retried(**STORED) | {Q.errors: Hash(group(GROUP, 1, NOW_MS, "a")), Q.errors_seen: ZSet({GROUP: NOW_MS})},
    ),
)
def test_retry_records_the_failure(r, redis_url, case):
    run_case(r, redis_url, case)


def test_archive_records_the_failure(r, redis_url):
    after = retried(**STORED)
    del after[Q.retry], after[ACTIVE_A_UNIQUE]  # a dead task releases its unique lock
    run_case(
        r,
        redis_url,
        Case(
            "archived: the same traceback and group as a retry",
            ACTIVE_A | COUNTED,
            archive(),
            after=after
            | {
                Q.task("a"): hash_with(after[Q.task("a")], state="archived"),
                Q.archived: ZSet({"a": NOW_MS}),
                Q.type_counts: counts(active__email=0, archived__email=1, processed__email=1, failed__email=1),
                Q.events: Stream([event("a", "active", "archived", worker=W, error="boom")]),
                Q.errors: Hash(group(GROUP, 1, NOW_MS, "a")),
                Q.errors_seen: ZSet({GROUP: NOW_MS}),
            },
        ),
    )


def test_deleting_the_queue_deletes_its_error_groups(r, redis_url):
    run_case(
        r,
        redis_url,
        Case("groups go with the queue", dict(SEEN_BEFORE), lambda t: t.delete_queue("default", False), after={}),
    )
