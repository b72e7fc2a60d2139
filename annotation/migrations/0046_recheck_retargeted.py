"""Quality issues cached before the checks read the re-picked target (0044's release): a review whose demo has a
retargeted turn forgets them, so they are computed again on the curated targets when next shown (they were kept
on the recorded elements, and a later re-check of another turn kept those turns' stale ``uid_missing``)."""

from django.db import migrations


def forget_retargeted_quality(apps, schema_editor):
    DemoReview = apps.get_model("annotation", "DemoReview")
    TurnCuration = apps.get_model("annotation", "TurnCuration")
    retargeted = TurnCuration.objects.filter(element__isnull=False).values("demonstration_id")
    DemoReview.objects.filter(demonstration_id__in=retargeted).update(quality=None)


class Migration(migrations.Migration):
    dependencies = [("annotation", "0045_traffic")]

    operations = [migrations.RunPython(forget_retargeted_quality, migrations.RunPython.noop)]
