from django.apps import AppConfig


class DemoConfig(AppConfig):
    """Makes ``manage.py demo_traffic`` available when ``demo.settings`` is the settings module."""

    name = "demo"
    verbose_name = "Demo"
