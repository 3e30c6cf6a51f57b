"""The scope of one HTTP request as an ASGI server hands it to the application, for tests that call Django's ASGI
handler or the console's ASGI application directly, below the test client."""

from __future__ import annotations

from typing import Any


def http_scope(method: str, path: str, headers: list[tuple[bytes, bytes]]) -> dict[str, Any]:
    """A request from 127.0.0.1 to ``path`` (no query string) with these headers (``host`` among them)."""
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": headers,
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 80),
    }
