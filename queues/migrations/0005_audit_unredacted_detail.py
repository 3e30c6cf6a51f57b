"""The audit log keeps what the operator was allowed to see: an edited task's original payload masked by
TASKS_REDACT, and the original in full only in ``unredacted_detail``, only with TASKS_AUDIT_UNREDACTED.

Entries written before held the original payload in clear; they are masked now by the rules in force. An entry
does not name its task's type, so while type rules exist an old original payload is masked whole."""

import json

from django.db import migrations, models


def mask_old_edits(apps, schema_editor):
    # The settings in force when the migration runs decide, as the rules they mask with already do: the typed
    # object is what the product reads them through (a data migration of the audit log, run once, not a schema
    # a historical model could disagree with).
    from taskq.queues.conf import taskq_settings
    from taskq.queues.engine.redaction import MASK
    from taskq.queues.redaction_access import rules

    redaction = rules()
    if not redaction:
        return
    keep = taskq_settings().audit_unredacted
    AuditLog = apps.get_model("taskq", "AuditLog")
    for entry in AuditLog.objects.filter(action="edit_task").only("id", "detail").iterator():
        try:
            detail = json.loads(entry.detail)
            original = detail["original_payload"]
        except (ValueError, TypeError, KeyError):
            continue
        if redaction.types:
            masked = json.dumps(MASK)
        else:
            masked = (redaction.apply("", original.encode()) or b"").decode()
        if masked == original:
            continue
        detail["original_payload"] = masked
        AuditLog.objects.filter(pk=entry.pk).update(
            detail=json.dumps(detail), unredacted_detail=entry.detail if keep else ""
        )


class Migration(migrations.Migration):
    dependencies = [
        ("taskq", "0004_audit_task_count_and_button_names"),
    ]

    operations = [
        migrations.AddField(
            model_name="auditlog",
            name="unredacted_detail",
            field=models.TextField(blank=True, editable=False),
        ),
        migrations.RunPython(mask_old_edits, migrations.RunPython.noop),
    ]
