"""The demo that ``make run`` starts: handlers with a little of everything the console should show
(``demo.tasks``) and a traffic generator (``manage.py demo_traffic``). Not part of the product: nothing in
``queues``, ``worker``, ``console`` or ``metrics`` imports it (an import-linter contract checks), and the wheel
leaves it out. ``DJANGO_SETTINGS_MODULE=demo.settings`` adds it to the console's settings."""
