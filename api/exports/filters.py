"""Filters of the job lists: by project, status and the job's format (and an evaluation's split)."""

from django_filters.rest_framework import ChoiceFilter, FilterSet

from annotation.models import Evaluation, ExportFormat, ExportJob


class JobFilter(FilterSet):
    """Export and evaluation jobs by project, status and their format. ``?format=`` is DRF's choice of the answer's
    own format (``json``, ``api``: the browsable API's links), so the job's format is filtered as ``job_format``."""

    job_format = ChoiceFilter(field_name="format", choices=ExportFormat.choices)


class ExportJobFilter(JobFilter):
    class Meta:
        model = ExportJob
        fields = {"project__name": ["exact"], "status": ["exact"]}


class EvaluationFilter(JobFilter):
    class Meta:
        model = Evaluation
        fields = {"project__name": ["exact"], "status": ["exact"], "split": ["exact"]}
