"""Creating, finding and revoking API tokens. A token is ``tq_`` and 43 URL-safe characters (32 random bytes);
the database keeps its SHA-256 and its first characters only, so a leaked database does not leak tokens."""

from __future__ import annotations

import base64
import hashlib
import os
from datetime import timedelta
from typing import Any

from django.utils import timezone

from taskq.queues.models import ApiToken

TOKEN_PREFIX = "tq_"
SHOWN_PREFIX = 10  # characters kept in clear to tell tokens apart ("tq_" and 7 more)
MAX_TOKEN_LENGTH = 200
LAST_USED_PRECISION = timedelta(seconds=60)  # last_used_at is written at most once a minute per token


def new_secret() -> str:
    return TOKEN_PREFIX + base64.urlsafe_b64encode(os.urandom(32)).decode().rstrip("=")


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def create_token(name: str, queues: list[str], namespaces: list[str] | None = None) -> tuple[ApiToken, str]:
    """A new token and its secret (the only time the secret exists in clear). Raises Django's ValidationError."""
    secret = new_secret()
    token = ApiToken(
        name=name, queues=queues, namespaces=namespaces or [], prefix=secret[:SHOWN_PREFIX], secret_hash=digest(secret)
    )
    token.full_clean()
    token.save()
    return token, secret


def assign_secret(token: ApiToken) -> str:
    """Give an unsaved token (the admin's add form) a fresh secret; returns it."""
    secret = new_secret()
    token.prefix, token.secret_hash = secret[:SHOWN_PREFIX], digest(secret)
    return secret


def authenticate(header: str | None) -> ApiToken | None:
    """The live token named by an ``Authorization: Bearer <token>`` header, or None."""
    if not header:
        return None
    scheme, _, secret = header.strip().partition(" ")
    secret = secret.strip()
    if scheme.lower() != "bearer" or not secret.startswith(TOKEN_PREFIX) or len(secret) > MAX_TOKEN_LENGTH:
        return None
    # Looked up by the hash of the presented secret: nothing secret is compared byte by byte.
    token: ApiToken | None = ApiToken.objects.filter(secret_hash=digest(secret), revoked_at__isnull=True).first()
    if token is not None:
        touch(token)
    return token


def touch(token: ApiToken) -> None:
    now = timezone.now()
    if token.last_used_at is None or now - token.last_used_at >= LAST_USED_PRECISION:
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
        token.last_used_at = now


def revoke(name: str) -> ApiToken | None:
    token: ApiToken | None = ApiToken.objects.filter(name=name).first()
    if token is not None and token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])
    return token


def token_doc(token: ApiToken) -> dict[str, Any]:
    def when(value: Any) -> str | None:
        return value.isoformat() if value else None

    return {
        "name": token.name,
        "prefix": token.prefix,
        "queues": token.queues,
        "namespaces": token.namespaces,
        "created_at": when(token.created_at),
        "last_used_at": when(token.last_used_at),
        "revoked_at": when(token.revoked_at),
        "revoked": token.revoked_at is not None,
    }
