"""``python manage.py demo_traffic``: enqueue a steady trickle of demo tasks (handled by ``demo.tasks``)."""

from __future__ import annotations

import random
import time
from typing import Any

from django.core.management.base import BaseCommand

from taskq.queues.conf import get_client


class Command(BaseCommand):
    help = "Enqueue demo tasks: a burst, then a few per second until stopped (or --count tasks in all)."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--count", type=int, default=0, help="stop after this many tasks (default: run on)")
        parser.add_argument("--rate", type=float, default=5.0, help="tasks per second after the first burst")

    def handle(self, *args: Any, **options: Any) -> None:
        client = get_client()
        burst = [self._task(n) for n in range(50)]
        client.enqueue_many(burst)
        sent = len(burst)
        self.stdout.write(f"enqueued a burst of {sent} demo tasks")
        self._django_tasks()
        try:
            while not options["count"] or sent < options["count"]:
                client.enqueue(**self._task(sent))
                sent += 1
                time.sleep(1 / max(options["rate"], 0.1))
        except KeyboardInterrupt:
            pass
        self.stdout.write(f"enqueued {sent} demo tasks")

    def _django_tasks(self) -> None:
        """A few of Django's own ``@task`` functions, enqueued through the framework (TASKS in demo/settings.py)."""
        from demo.django_tasks import send_welcome, sync_invoice, warm_cache

        for n in range(3):
            send_welcome.enqueue(100 + n, locale=random.choice(["en", "fr"]))
            sync_invoice.enqueue(2000 + n)
        warm_cache.enqueue(["home", "pricing", "docs"])
        self.stdout.write("enqueued 7 Django tasks (demo.django_tasks)")

    @staticmethod
    def _task(n: int) -> dict[str, Any]:
        kind = random.choice(["email", "email", "image", "report", "refund"])
        if kind == "email":
            return {
                "type": "email:deliver",
                "payload": {"to": f"user{n}@example.com"},
                "queue": "critical",
                "retention": 3600,
            }
        if kind == "image":
            return {"type": "image:resize", "payload": {"image": n, "width": 320}, "queue": "default", "retention": 600}
        if kind == "report":
            return {
                "type": "report:flaky",
                "payload": {"day": n % 30},
                "queue": "low",
                "max_retry": 2,
                "process_in": random.choice([0, 0, 5, 30]),
            }
        return {
            "type": "payment:refund",
            "payload": {"amount": random.choice([10, 25, -1])},
            "queue": "critical",
            "max_retry": 5,
        }
