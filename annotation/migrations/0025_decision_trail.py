"""The decision trail of form work (``Decision``, docs/quality.md): every approve, reject, automatic approval,
reopen and undo, with who, when, the review state before and after and the feedback.

Decisions taken before the trail existed get one entry each, read from the assignment (``reviewed_at``,
``reviewed_by``, ``feedback``; ``auto`` when no one decided), and a reopened assignment an entry for its reopen, so
every trail starts where its assignment's review stands. Reverse: the table goes, nothing else changes.
"""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

CHUNK = 2000


def backfill(apps, schema_editor):
    Assignment, Decision = apps.get_model("annotation", "Assignment"), apps.get_model("annotation", "Decision")
    decided = Assignment.objects.filter(status="submitted").exclude(review="pending").order_by("pk")
    entries = []
    for a in decided.only("pk", "review", "reviewed_at", "reviewed_by", "feedback", "reopened_at", "submitted_at"):
        at = a.reviewed_at or a.submitted_at
        kind = "manual" if a.reviewed_by_id else "auto"
        entries.append(
            Decision(
                assignment_id=a.pk,
                kind=kind,
                from_state="pending",
                to_state=a.review,
                by_id=a.reviewed_by_id,
                at=at,
                feedback=a.feedback,
            )
        )
        if a.reopened_at:
            entries.append(
                Decision(assignment_id=a.pk, kind="reopen", from_state=a.review, to_state=a.review, at=a.reopened_at)
            )
        if len(entries) >= CHUNK:
            Decision.objects.bulk_create(entries)
            entries = []
    Decision.objects.bulk_create(entries)


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0024_gold_rule"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="Decision",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                (
                    "kind",
                    models.CharField(
                        choices=[
                            ("manual", "Decided"),
                            ("bulk", "Decided in bulk"),
                            ("csv", "Decided in the results CSV"),
                            ("auto", "Approved automatically"),
                            ("reopen", "Reopened"),
                            ("undo", "Undone"),
                        ],
                        max_length=16,
                    ),
                ),
                (
                    "from_state",
                    models.CharField(
                        choices=[("pending", "Submitted"), ("approved", "Approved"), ("rejected", "Rejected")],
                        max_length=16,
                    ),
                ),
                (
                    "to_state",
                    models.CharField(
                        choices=[("pending", "Submitted"), ("approved", "Approved"), ("rejected", "Rejected")],
                        max_length=16,
                    ),
                ),
                ("at", models.DateTimeField()),
                (
                    "feedback",
                    models.TextField(blank=True, help_text="The feedback the decision gave, or why it was undone."),
                ),
                (
                    "assignment",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="decisions",
                        to="annotation.assignment",
                    ),
                ),
                (
                    "by",
                    models.ForeignKey(
                        blank=True,
                        help_text="Who decided; empty for the automatic approval.",
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
                (
                    "undoes",
                    models.OneToOneField(
                        blank=True,
                        help_text="An undo's target.",
                        null=True,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="undone_by",
                        to="annotation.decision",
                    ),
                ),
            ],
            options={
                "ordering": ["assignment", "at", "pk"],
                "indexes": [models.Index(fields=["assignment", "at"], name="decision_trail")],
            },
        ),
        migrations.RunPython(backfill, migrations.RunPython.noop),
    ]
