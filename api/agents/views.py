"""The agent-run API: start a run of a solver on a split of a project's form tasks, follow it, cancel it, read its
scores and every field's result. Researchers and admins of the project only (as exports and evaluations)."""

from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response

from annotation import actions
from annotation.models import AgentFieldResult, AgentRun

from ..exports.views import JobViewSetMixin
from ..serializers import error_responses
from . import serializers as a

ERRORS = error_responses(400, 403, 404, 409)


@extend_schema_view(retrieve=extend_schema(responses={200: a.AgentRunSerializer, 404: ERRORS[404]}))
class AgentRunViewSet(JobViewSetMixin, mixins.CreateModelMixin, viewsets.ReadOnlyModelViewSet):
    """Agent runs: a Celery job per run, on a worker with its own headless Chromium."""

    model = AgentRun
    serializer_class = a.AgentRunSerializer
    filterset_fields = {"project__name": ["exact"], "status": ["exact"], "split": ["exact"], "solver": ["exact"]}

    @extend_schema(request=a.AgentRunCreateSerializer, responses={202: a.AgentRunSerializer, **ERRORS})
    def create(self, request):
        """Start a run; 202 with the run. Poll it for progress; its results fill in when it is done."""
        form = a.AgentRunCreateSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        data = form.validated_data
        project = actions.check_project_for_export(request.user, data["project"])
        run = actions.do_create_agent_run(
            request.user, project, data["split"], data["solver"], data["instances"], data["seed"], data["metric"]
        )
        return Response(self.get_serializer(run).data, status=status.HTTP_202_ACCEPTED)

    @extend_schema(request=None, responses={200: a.AgentFieldResultSerializer(many=True), **ERRORS})
    @action(detail=True, methods=["get"], filter_backends=[])
    def fields(self, request, pk=None):
        """Every field the run met so far: the value read from the page, the gold answers, the score, why it was
        not scored, what the solver raised and the actions it took. Paginated."""
        run = self.get_object()
        rows = AgentFieldResult.objects.filter(row__run=run).select_related("row").order_by("row_id", "pk")
        page = self.paginate_queryset(rows)
        return self.get_paginated_response(a.AgentFieldResultSerializer(page, many=True).data)
