"""``tasks token create|ls|revoke``: bearer tokens of the HTTP API (``/api/v1/``).

The secret is printed once, by ``create``; the database keeps only its SHA-256 and first characters.
"""

from __future__ import annotations

import argparse
from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError

from taskq.queues.api.tokens import create_token as create
from taskq.queues.api.tokens import revoke, token_doc
from taskq.queues.engine import TaskNotFoundError, ValidationError
from taskq.queues.engine.quoting import shown
from taskq.queues.models import ApiToken

from . import output as out
from .context import Context
from .parser import command, group


def comma_list(text: str) -> list[str]:
    return [item.strip() for item in text.split(",") if item.strip()]


def register(sub: argparse._SubParsersAction[Any]) -> None:
    token = group(sub, "token", "Create, list and revoke HTTP API tokens.")
    create = command(token, "create", create_token, "Create a token and print its secret (once).")
    create.add_argument("--name", required=True, help="a unique name for the token")
    create.add_argument(
        "--queues", type=comma_list, default=[], help="comma-separated queue names the token may use ('*' for all)"
    )
    create.add_argument(
        "--namespaces",
        type=comma_list,
        default=[],
        help="comma-separated namespaces: 'shop' covers every queue named 'shop:<anything>'",
    )
    command(token, "ls", list_tokens, "List tokens (never their secrets).")
    revoke = command(token, "revoke", revoke_token, "Revoke a token: it is refused from now on.")
    revoke.add_argument("name", help="the token's name")


def create_token(args: argparse.Namespace, ctx: Context) -> out.Output:
    if not args.queues and not args.namespaces:
        raise ValidationError("give --queues and/or --namespaces: a token without a scope can do nothing")
    if ApiToken.objects.filter(name=args.name).exists():
        raise ValidationError(f"a token named {shown(args.name)} exists already")
    try:
        token, secret = create(args.name, args.queues, args.namespaces)
    except DjangoValidationError as exc:
        raise ValidationError("; ".join(exc.messages)) from None
    doc = {**_doc(token), "token": secret}
    text = (
        f"Created token {shown(token.name)} for queues {', '.join(token.queues) or '-'}"
        f"{' and namespaces ' + ', '.join(token.namespaces) if token.namespaces else ''}.\n"
        f"Token (shown once, store it now): {secret}"
    )
    return out.Output(doc, text)


def _doc(token: Any) -> dict[str, Any]:
    return token_doc(token)


def list_tokens(args: argparse.Namespace, ctx: Context) -> out.Output:
    tokens = list(ApiToken.objects.all())
    rows = [
        [
            t.name,
            t.prefix + "…",
            ",".join(t.queues) or "-",
            ",".join(t.namespaces) or "-",
            "revoked" if t.revoked_at else "active",
            out.iso(t.last_used_at) or "never",
        ]
        for t in tokens
    ]
    text = (
        out.table(["NAME", "PREFIX", "QUEUES", "NAMESPACES", "STATE", "LAST USED"], rows)
        if tokens
        else "No API tokens."
    )
    return out.Output({"tokens": [_doc(t) for t in tokens]}, text)


def revoke_token(args: argparse.Namespace, ctx: Context) -> out.Output:
    token = revoke(args.name)
    if token is None:
        raise TaskNotFoundError(f"no token named {shown(args.name)}")
    return out.Output(_doc(token), f"Revoked token {shown(token.name)}.")
