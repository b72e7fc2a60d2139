"""The TurkingBench export's filters: the batches, the review states of the submitted work, gold rows and exact
cells. TurkingBench jobs made before get the review states they used (approved and not yet reviewed work)."""

from django.db import migrations, models


def review_states_used(apps, schema_editor):
    ExportJob = apps.get_model("annotation", "ExportJob")
    ExportJob.objects.filter(format="turkingbench").update(review_states=["approved", "pending"])


class Migration(migrations.Migration):

    dependencies = [
        ('annotation', '0025_decision_trail'),
    ]

    operations = [
        migrations.AddField(
            model_name='exportjob',
            name='batches',
            field=models.ManyToManyField(blank=True, help_text='TurkingBench: the form batches exported, fixed when the job is created (empty: every form batch of the project, for jobs made before the choice existed).', related_name='+', to='annotation.batch'),
        ),
        migrations.AddField(
            model_name='exportjob',
            name='exact_cells',
            field=models.BooleanField(default=False, help_text="TurkingBench: batch.csv cells written verbatim, as TurkingBench's tools read them (not escaped for spreadsheets)."),
        ),
        migrations.AddField(
            model_name='exportjob',
            name='review_states',
            field=models.JSONField(blank=True, default=list, help_text="TurkingBench: review states of the submitted work written as answer rows, e.g. ['approved', 'pending']."),
        ),
        migrations.AlterField(
            model_name='exportjob',
            name='include_gold',
            field=models.BooleanField(default=False, help_text='TurkingBench: also write the gold rows (the known answers imported with a batch).'),
        ),
        migrations.RunPython(review_states_used, migrations.RunPython.noop),
    ]
