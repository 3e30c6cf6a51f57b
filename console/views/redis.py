"""The Redis page: the figures an operator checks first, then the whole INFO reply."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse

from taskq.queues.engine.clock import from_ms
from taskq.queues.engine.inspector import INFO_REFUSED

from ..access import viewer_page
from ..page_render import render
from .common import inspector

#: (label, INFO field) pairs of the summary, in the order they are shown.
SUMMARY = [
    ("Version", "redis_version"),
    ("Mode", "redis_mode"),
    ("Uptime", "uptime_in_seconds"),
    ("Connected clients", "connected_clients"),
    ("Blocked clients", "blocked_clients"),
    ("Memory used", "used_memory_human"),
    ("Memory peak", "used_memory_peak_human"),
    ("Max memory", "maxmemory_human"),
    ("Eviction policy", "maxmemory_policy"),
    ("Fragmentation ratio", "mem_fragmentation_ratio"),
]
#: What the page shows for a field the server did not report.
UNAVAILABLE = "unavailable"
PERSISTENCE = [
    ("AOF enabled", "aof_enabled"),
    ("Last RDB save", "rdb_last_save_time"),
    ("RDB changes since save", "rdb_changes_since_last_save"),
    ("Last RDB save status", "rdb_last_bgsave_status"),
    ("AOF last write status", "aof_last_write_status"),
]


@viewer_page
def redis_info(request: HttpRequest) -> HttpResponse:
    """Access: viewers. One INFO call; where the server refuses INFO, the page says so and shows what it could
    read (the key count) instead of failing."""
    info = inspector().redis_info()
    last_save = info.get("rdb_last_save_time")
    context = {
        "summary": [(label, _shown(info, key)) for label, key in SUMMARY],
        "persistence": [(label, _shown(info, key)) for label, key in PERSISTENCE],
        # Named on the page with the reason (INFO refused, or a field this server's version does not report).
        "unavailable": [label for label, key in SUMMARY + PERSISTENCE if key not in info],
        "uptime": info.get("uptime_in_seconds"),
        "last_save": from_ms(int(last_save) * 1000) if isinstance(last_save, int) and last_save else None,
        "full": sorted((key, _flat(value)) for key, value in info.items() if key != INFO_REFUSED),
        "info_refused": info.get(INFO_REFUSED),
    }
    return render(request, "taskq/redis.html", context)


def _shown(info: dict[str, object], key: str) -> object:
    """A field's value as the page shows it: ``maxmemory`` 0 means no limit (INFO's ``maxmemory_human`` says
    "0B"); a field the server did not report is "unavailable"."""
    if key == "maxmemory_human" and info.get("maxmemory") == 0:
        return "no limit"
    return info.get(key, UNAVAILABLE)


def _flat(value: object) -> str:
    """INFO nests some sections (keyspace ``db0: {keys: …}``): show them as ``k=v,…`` as redis-cli does."""
    if isinstance(value, dict):
        return ",".join(f"{k}={v}" for k, v in value.items())
    return str(value)
