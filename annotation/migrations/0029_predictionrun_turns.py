from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0028_turn_curation_suggested_from"),
    ]

    operations = [
        # Runs made before the field asked about every turn but the instructor's chat: they are "all".
        migrations.AddField(
            model_name="predictionrun",
            name="turns",
            field=models.CharField(default="all", max_length=16),
            preserve_default=False,
        ),
        migrations.AlterField(
            model_name="predictionrun",
            name="turns",
            field=models.CharField(
                default="official",
                help_text="WebLINX: the turns asked and scored, official (the official code's) or all.",
                max_length=16,
            ),
        ),
    ]
