from django.apps import AppConfig


class QueuesConfig(AppConfig):
    """Queue definitions and policies (models, admin); the Django-free engine lives in queues.engine."""

    name = "queues"
    verbose_name = "Queues"

    def ready(self) -> None:
        # ``handler.enqueue(...)`` (the function-style API) uses the engine's default client: point it at the
        # Redis of the Django settings. The connection opens lazily, so this costs nothing at start-up.
        from . import conf
        from .engine import configure

        configure(conf.redis_url(), prefix=conf.key_prefix(), limits=conf.limits())
        from . import signals

        signals.connect()
