from django.db import migrations, models
from django.db.models import Count, OuterRef, Subquery
from django.db.models.functions import Coalesce


def count_tasks(apps, schema_editor):
    """The counters of the batches stored before them, counted once."""
    Batch, Task = apps.get_model("annotation", "Batch"), apps.get_model("annotation", "Task")
    per_batch = Task.objects.filter(batch=OuterRef("pk")).values("batch").order_by()
    total = per_batch.annotate(n=Count("pk")).values("n")
    done = per_batch.filter(completed=True).annotate(n=Count("pk")).values("n")
    Batch.objects.update(tasks_total=Coalesce(Subquery(total), 0), tasks_done=Coalesce(Subquery(done), 0))


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0019_qreview"),
    ]

    operations = [
        migrations.AddField(
            model_name="batch",
            name="tasks_done",
            field=models.PositiveIntegerField(default=0, editable=False, help_text="How many of them are complete."),
        ),
        migrations.AddField(
            model_name="batch",
            name="tasks_total",
            field=models.PositiveIntegerField(default=0, editable=False, help_text="How many tasks the batch has."),
        ),
        migrations.RunPython(count_tasks, migrations.RunPython.noop),
    ]
