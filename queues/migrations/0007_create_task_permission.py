"""The ``create_task`` permission ("Can create a task from the console"), added as 0003 added
``edit_task``: the AuditLog's options again, with one more permission. No group is given it.

The options are 0003's own, read from that migration, plus the new permission, rather than written out a second
time: 0003 is a frozen record, so what it holds cannot drift from what this one extends."""

from importlib import import_module

from django.db import migrations

EDIT_TASK = import_module("taskq.queues.migrations.0003_edit_task_permission").Migration.operations[0]
OPTIONS = {
    **EDIT_TASK.options,
    "permissions": [*EDIT_TASK.options["permissions"], ("create_task", "Can create a task from the console")],
}


class Migration(migrations.Migration):
    dependencies = [
        ("taskq", "0006_audit_action_names"),
    ]

    operations = [migrations.AlterModelOptions(name="auditlog", options=OPTIONS)]
