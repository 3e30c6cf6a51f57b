"""ASGI entry point of the standalone console: ``daphne taskq.console.asgi:application``.

Built as a project's is (docs/getting-started.md): Django's handler for HTTP (WhiteNoise serves /static/ inside
it), wrapped by ``taskq.asgi.with_taskq`` for the live console's WebSocket, so the two cannot drift.
"""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "taskq.console.settings")

application = get_asgi_application()

# taskq's lines, as docs/getting-started.md gives them to a project (tests/test_getting_started.py compares).
from taskq.asgi import with_taskq  # noqa: E402 - a project's asgi.py ends with these lines

application = with_taskq(application)
