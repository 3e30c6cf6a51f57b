"""The audit log counts the tasks of each entry (its ids are bounded), and names actions after their buttons: the
console's Resume button recorded ``unpause_queue``, now ``resume_queue``; old entries are renamed alike."""

from django.db import migrations, models

#: Old action name -> the name of its button.
RENAMED = {"unpause_queue": "resume_queue"}


def count_and_rename(apps, schema_editor):
    AuditLog = apps.get_model("taskq", "AuditLog")
    for entry in AuditLog.objects.only("id", "task_ids").iterator():
        AuditLog.objects.filter(pk=entry.pk).update(task_count=len(entry.task_ids or []))
    for old, new in RENAMED.items():
        AuditLog.objects.filter(action=old).update(action=new)


def rename_back(apps, schema_editor):
    AuditLog = apps.get_model("taskq", "AuditLog")
    for old, new in RENAMED.items():
        AuditLog.objects.filter(action=new).update(action=old)


class Migration(migrations.Migration):
    dependencies = [
        ("taskq", "0003_edit_task_permission"),
    ]

    operations = [
        migrations.AddField(
            model_name="auditlog",
            name="task_count",
            field=models.PositiveIntegerField(default=0),
        ),
        migrations.RunPython(count_and_rename, rename_back),
    ]
