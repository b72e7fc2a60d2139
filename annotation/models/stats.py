"""What a project pays for work: per-hour rates per activity and per-item rates (see docs/stats.md).

WebLINX paid its annotators per hour (US$7.5/h recording, plus US$5/h overhead); Mind2Web per accepted task
(US$0.80). Both are expressed here; any rate left at zero adds nothing to the pay report.
"""

from decimal import Decimal

from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models

from .manage import Project

RATE_FIELD = {"max_digits": 10, "decimal_places": 2, "default": Decimal("0")}
RATE_VALIDATORS = [MinValueValidator(Decimal("0")), MaxValueValidator(Decimal("100000"))]


class PayRates(models.Model):
    """A project's pay rates, edited by its admins. ``idle_gap_minutes`` caps review sessions: a pause longer
    than this between two review edits ends a session, so time away from the page is not counted."""

    project = models.OneToOneField(Project, on_delete=models.CASCADE, related_name="pay_rates")
    currency = models.CharField(max_length=8, default="USD")
    recording_per_hour = models.DecimalField(**RATE_FIELD, validators=RATE_VALIDATORS)
    review_per_hour = models.DecimalField(**RATE_FIELD, validators=RATE_VALIDATORS)
    form_task_per_hour = models.DecimalField(**RATE_FIELD, validators=RATE_VALIDATORS)
    overhead_per_hour = models.DecimalField(
        **RATE_FIELD, validators=RATE_VALIDATORS, help_text="Added for every hour of any activity."
    )
    per_validated_demo = models.DecimalField(
        **RATE_FIELD, validators=RATE_VALIDATORS, help_text="Paid to the navigator of each validated demonstration."
    )
    per_submitted_assignment = models.DecimalField(
        **RATE_FIELD, validators=RATE_VALIDATORS, help_text="Paid for each submitted form-task assignment."
    )
    idle_gap_minutes = models.PositiveIntegerField(
        default=10, validators=[MinValueValidator(1), MaxValueValidator(24 * 60)]
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name_plural = "pay rates"

    def __str__(self):
        return f"pay rates of {self.project}"

    @classmethod
    def for_project(cls, project):
        """The project's rates (all zero until an admin sets them); not stored until saved."""
        return cls.objects.filter(project=project).first() or cls(project=project)
