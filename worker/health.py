"""The worker's health endpoint (``taskworker --health-port``): ``GET /healthz`` answers 200 while every loop of
the worker runs and its last heartbeat reached Redis recently, 503 otherwise, with one JSON document that names
each check, for container healthchecks and load balancers.

A process that is up but whose fetch loop died, or that cannot reach Redis, serves no tasks; a port that merely
answers (like the metrics port) would still call it healthy.

Deliberately shares its name with ``console/views/health.py``: each is its process's health probe (this the
worker's, that the console's ``/healthz``).
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

log = logging.getLogger("taskq.worker.health")

PATHS = ("/healthz", "/")


class WorkerHealth:
    """``loops`` maps a loop's name to a function telling whether it still runs; ``last_beat`` returns the clock
    time of the last heartbeat that reached Redis (None before the first), which counts for ``max_age`` seconds."""

    def __init__(
        self,
        loops: dict[str, Callable[[], bool]],
        last_beat: Callable[[], float | None],
        max_age: float,
        now: Callable[[], float],
    ) -> None:
        self.loops = loops
        self.last_beat = last_beat
        self.max_age = max_age
        self.now = now

    def report(self) -> tuple[bool, dict[str, Any]]:
        """(healthy, the JSON document)."""
        stopped = sorted(name for name, alive in self.loops.items() if not alive())
        beat = self.last_beat()
        age = None if beat is None else max(0.0, self.now() - beat)
        checks: dict[str, dict[str, Any]] = {
            "loops": {"ok": not stopped, "stopped": stopped},
            "heartbeat": {
                "ok": age is not None and age <= self.max_age,
                "age_seconds": None if age is None else round(age, 3),
                "max_age_seconds": round(self.max_age, 3),
            },
        }
        healthy = all(check["ok"] for check in checks.values())
        return healthy, {"status": "ok" if healthy else "unhealthy", "checks": checks}

    def serve(self, port: int, host: str = "0.0.0.0") -> ThreadingHTTPServer:
        """Start serving in a daemon thread; returns the server (``.server_address`` has the bound port)."""
        server = ThreadingHTTPServer((host, port), _handler(self))
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, name="health", daemon=True).start()
        return server


def _handler(health: WorkerHealth) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # the name http.server dispatches to
            if self.path.split("?", 1)[0] not in PATHS:
                self._send(404, {"error": f"not found; the health check is at {PATHS[0]}"})
                return
            healthy, doc = health.report()
            self._send(200 if healthy else 503, doc)

        def _send(self, status: int, doc: dict[str, Any]) -> None:
            body = json.dumps(doc).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:  # http.server's signature
            log.debug(format, *args)  # a probe every few seconds must not flood the worker's log

    return Handler
