# Group aggregation settings of a queue definition (blank: the worker's TASKS_GROUP_* defaults).

import django.core.validators
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("queues", "0004_periodic_task"),
    ]

    operations = [
        migrations.AddField(
            model_name="queuedefinition",
            name="group_grace_period",
            field=models.PositiveIntegerField(
                blank=True,
                null=True,
                verbose_name="group grace period (seconds)",
                help_text="A group is combined once no task joined it for this long. Blank: the "
                "TASKS_GROUP_GRACE_SECONDS default.",
                validators=[django.core.validators.MaxValueValidator(31622400)],
            ),
        ),
        migrations.AddField(
            model_name="queuedefinition",
            name="group_max_delay",
            field=models.PositiveIntegerField(
                blank=True,
                null=True,
                verbose_name="group max delay (seconds)",
                help_text="A group is combined once its oldest task waited this long; 0: no limit. Blank: the "
                "TASKS_GROUP_MAX_DELAY_SECONDS default.",
                validators=[django.core.validators.MaxValueValidator(31622400)],
            ),
        ),
        migrations.AddField(
            model_name="queuedefinition",
            name="group_max_size",
            field=models.PositiveIntegerField(
                blank=True,
                null=True,
                help_text="A group is combined once it holds this many tasks (and one combined task takes at most "
                "this many); 0: no limit. Blank: the TASKS_GROUP_MAX_SIZE default.",
                validators=[django.core.validators.MaxValueValidator(1000000)],
            ),
        ),
    ]
