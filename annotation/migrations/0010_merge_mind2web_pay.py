# Joins the two 0009 migrations (Mind2Web and pay) of branches merged in parallel.

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0009_mind2web"),
        ("annotation", "0009_pay"),
    ]

    operations = []
