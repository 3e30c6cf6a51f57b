"""Helpers of the HTTP API tests, importable by name (a conftest is not: several folders have one)."""

from __future__ import annotations

import json
from typing import Any

from django.test import Client

from taskq.queues import handles


def clear_caches() -> None:
    handles.reset()


class Api:
    """The Django test client with a bearer token and JSON bodies: ``api.post(path, {...}).json()``."""

    def __init__(self, secret: str | None) -> None:
        self.client = Client()
        self.secret = secret

    def _headers(self, secret: str | None) -> dict[str, str]:
        secret = self.secret if secret is None else secret
        return {"HTTP_AUTHORIZATION": f"Bearer {secret}"} if secret else {}

    def get(self, path: str, secret: str | None = None, **params: Any) -> Any:
        return self.client.get(path, params, **self._headers(secret))

    def post(self, path: str, body: Any = None, secret: str | None = None) -> Any:
        data = b"" if body is None else (body if isinstance(body, (bytes, str)) else json.dumps(body))
        return self.client.post(path, data, content_type="application/json", **self._headers(secret))

    def delete(self, path: str, secret: str | None = None) -> Any:
        return self.client.delete(path, **self._headers(secret))
