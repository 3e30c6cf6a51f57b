"""The console's view of django-rq queues: the migration path for teams moving from RQ to taskq.

``bridge`` reads and acts on the queues configured in django-rq's ``RQ_QUEUES`` through RQ's own API (queues,
registries, ``Job``); ``views`` and ``urls`` serve them under ``/rq/``. Nothing here touches taskq's own keys.
"""

from __future__ import annotations

from django.apps import apps


def bridge_enabled() -> bool:
    """Whether the project runs the bridge: django-rq (the ``rq`` extra) is in its INSTALLED_APPS. Without it the
    console leaves out the RQ pages and the dashboard's RQ section, and imports nothing of RQ."""
    return bool(apps.is_installed("django_rq"))
