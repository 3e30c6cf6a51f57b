"""One naming for audit actions, wherever the button is: the admin wrote ``<object>.<verb>``
(``queue.pause``, ``task.run``, ``queuedefinition.add``), the console ``<verb>_<object>`` (``pause_queue``).
Old admin entries are renamed to the console's form, so a filter on one name finds both; reversible."""

from django.db import migrations

#: Written by the admin before this migration. ``task.view_unredacted`` (taskq.queues.redaction_access.VIEW_ACTION) keeps
#: its name: the redaction code still writes it.
OBJECTS = ("queue", "task", "queuedefinition", "uniquepolicy", "retentionpolicy", "periodictask", "apitoken")
KEPT = {"task.view_unredacted"}


def renamed(action: str) -> str | None:
    what, dot, verb = action.partition(".")
    if not dot or what not in OBJECTS or action in KEPT:
        return None
    return f"{verb}_{what}"


def rename(apps, schema_editor):
    AuditLog = apps.get_model("taskq", "AuditLog")
    for action in AuditLog.objects.values_list("action", flat=True).distinct():
        new = renamed(action)
        if new:
            AuditLog.objects.filter(action=action).update(action=new)


def rename_back(apps, schema_editor):
    AuditLog = apps.get_model("taskq", "AuditLog")
    for action in AuditLog.objects.values_list("action", flat=True).distinct():
        verb, _, what = action.rpartition("_")
        if verb and what in OBJECTS and "." not in action:
            old = f"{what}.{verb}"
            if renamed(old) == action and old not in KEPT:
                AuditLog.objects.filter(action=action).update(action=old)


class Migration(migrations.Migration):
    dependencies = [
        ("taskq", "0005_audit_unredacted_detail"),
    ]

    operations = [migrations.RunPython(rename, rename_back)]
