"""Schemathesis hooks for ``test_schemathesis.py`` (loaded through ``SCHEMATHESIS_HOOKS``).

A consume's ``timeout`` is a long poll of up to 60 s on queues that are mostly empty: drawn at random, one request
in two would wait half a minute and the bounded run would test almost nothing else. A valid wait is cut to a
fifth of a second; it stays valid, and invalid values (negative, over 60, not a number) are left as drawn, so
every check still judges the request it was generated as. Long polls themselves are tested in test_endpoints.py.
"""

from __future__ import annotations

from typing import Any

import schemathesis

SHORT_WAIT = 0.2


@schemathesis.hook
def map_case(context: Any, case: Any) -> Any:
    if case.operation.path.endswith("/consume") and isinstance(case.body, dict):
        timeout = case.body.get("timeout")
        if isinstance(timeout, (int, float)) and not isinstance(timeout, bool) and SHORT_WAIT < timeout <= 60:
            case.body["timeout"] = SHORT_WAIT
    return case
