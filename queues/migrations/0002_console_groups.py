"""The console's two roles as groups: "Console viewers" (view_console) and "Console operators" (view_console
and operate_console). Permissions are normally created after all migrations run (post_migrate), so they are
created here if missing; post_migrate then finds them."""

from django.db import migrations

PERMISSIONS = {
    "view_console": "Can view the task console",
    "operate_console": "Can act on queues and tasks in the task console",
}
GROUPS = {
    "Console viewers": ["view_console"],
    "Console operators": ["view_console", "operate_console"],
}


def create_groups(apps, schema_editor):
    ContentType = apps.get_model("contenttypes", "ContentType")
    Permission = apps.get_model("auth", "Permission")
    Group = apps.get_model("auth", "Group")
    content_type, _ = ContentType.objects.get_or_create(app_label="taskq", model="auditlog")
    permissions = {
        codename: Permission.objects.get_or_create(
            codename=codename, content_type=content_type, defaults={"name": name}
        )[0]
        for codename, name in PERMISSIONS.items()
    }
    for group_name, codenames in GROUPS.items():
        group, _ = Group.objects.get_or_create(name=group_name)
        group.permissions.add(*(permissions[c] for c in codenames))


def remove_groups(apps, schema_editor):
    apps.get_model("auth", "Group").objects.filter(name__in=GROUPS).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("queues", "0001_initial"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [migrations.RunPython(create_groups, remove_groups)]
