"""Helpers of the console tests: users with the console's permissions, logged-in clients."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.contrib.contenttypes.models import ContentType
from django.test import Client

PASSWORD = "pw-for-tests-only"


def _permission(codename: str) -> Permission:
    # get_or_create: the permissions belong to the queues app's AuditLog model; this also works before (or
    # without) its migration in the test database.
    content_type, _ = ContentType.objects.get_or_create(app_label="taskq", model="auditlog")
    permission, _ = Permission.objects.get_or_create(
        codename=codename, content_type=content_type, defaults={"name": codename.replace("_", " ")}
    )
    return permission


def make_user(username: str, *codenames: str, **extra):
    user = get_user_model().objects.create_user(username, password=PASSWORD, **extra)
    for codename in codenames:
        user.user_permissions.add(_permission(codename))
    return user


def logged_in(user, **kwargs) -> Client:
    client = Client(**kwargs)
    client.force_login(user)
    return client


def redis_snapshot(r) -> dict[bytes, bytes]:
    """Every key of a test database and its value, serialized (DUMP): two equal snapshots, nothing was written."""
    return {key: r.dump(key) for key in r.scan_iter()}
