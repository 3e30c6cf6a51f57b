"""Job functions of the RQ tests. The RQ worker subprocess imports this module by name (``rq_jobs``),
so the tests put tests/rq on its PYTHONPATH."""

from __future__ import annotations


def add(a: int, b: int) -> int:
    return a + b


def explode(message: str = "boom") -> None:
    raise RuntimeError(message)


def fail_until_marker(marker_path: str) -> str:
    """Fails while ``marker_path`` does not exist: the test creates it, then requeues the failed job."""
    from pathlib import Path

    if not Path(marker_path).exists():
        raise RuntimeError(f"marker {marker_path} not there yet")
    return "recovered"


def wait_for_marker(marker_path: str, timeout: float = 30.0) -> str:
    """Runs until ``marker_path`` exists (at most ``timeout`` seconds), so a test can look at a started job."""
    import time
    from pathlib import Path

    deadline = time.monotonic() + timeout
    while not Path(marker_path).exists():
        if time.monotonic() > deadline:
            raise TimeoutError(f"marker {marker_path} never appeared")
        time.sleep(0.05)
    return "released"


def login(user: str, password: str) -> dict:
    """Fails quoting its password, as careless code does; the console must not show it (TASKS_REDACT)."""
    raise ValueError(f"login refused for {user} with password {password!r}")


def session(user: str, password: str) -> dict:
    """Returns the password deep in its result."""
    return {"user": user, "grants": [{"scope": "all", "token": password + "-tok"}], "echo": password}
