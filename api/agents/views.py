"""The agent-run API: start a run of a solver on a split of a project's form tasks, follow it, cancel it, read its
scores and every field's result; a project's model endpoints (its researchers add and use them; only an endpoint's
owner or a project admin changes or removes it) and its model limits (its admins change them); prediction runs.
Researchers and admins of the project only (as exports and evaluations)."""

from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response

from annotation import actions
from annotation.actions import agents as agent_actions
from annotation.actions import endpoints as endpoint_actions
from annotation.actions import predictions as prediction_actions
from annotation.models import AgentFieldResult, AgentRun, ModelEndpoint, ModelLimits, PredictionRun, Project

from ..exports.views import READ_ERRORS, JobViewSetMixin, OtherRoleForbiddenMixin
from ..serializers import error_responses
from . import serializers as a

ERRORS = error_responses(400, 403, 404, 409)


class ModelsRoleMixin:
    """Runs and endpoints: other roles of their project are told who may use models (``OtherRoleForbiddenMixin``)."""

    def check_not_other_role(self, pk) -> None:
        endpoint_actions.check_not_other_role(self.request.user, self.model.objects, pk)


PREDICTIONS_FILE = {"type": "array", "items": {"type": "object", "additionalProperties": True}}


@extend_schema_view(retrieve=extend_schema(responses={200: a.AgentRunSerializer, **READ_ERRORS}))
class AgentRunViewSet(ModelsRoleMixin, JobViewSetMixin, mixins.CreateModelMixin, viewsets.ReadOnlyModelViewSet):
    """Agent runs: a Celery job per run, on a worker with its own headless Chromium."""

    model = AgentRun
    serializer_class = a.AgentRunSerializer
    filterset_fields = {"project__name": ["exact"], "status": ["exact"], "split": ["exact"], "solver": ["exact"]}

    def get_queryset(self):
        return super().get_queryset().select_related("endpoint")

    def list(self, request, *args, **kwargs):
        agent_actions.check_split_filter(request.user, request.query_params.get("split"))
        agent_actions.check_solver_filter(request.query_params.get("solver"))
        return super().list(request, *args, **kwargs)

    @extend_schema(request=a.AgentRunCreateSerializer, responses={202: a.AgentRunSerializer, **ERRORS})
    def create(self, request):
        """Start a run; 202 with the run. Poll it for progress; its results fill in when it is done. An llm run
        asks within the project's model limits (``/api/model-limits/<project>/``): more is a 400 naming the
        setting."""
        form = a.AgentRunCreateSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        data = form.validated_data
        project = endpoint_actions.check_project_for_models(request.user, data["project"])
        run = actions.do_create_agent_run(
            request.user,
            project,
            data["split"],
            data["solver"],
            data["instances"],
            data["seed"],
            data["metric"],
            browsers=data["browsers"],
            **{name: data[name] for name in agent_actions.RUN_MODEL_SETTINGS},
        )
        return Response(self.get_serializer(run).data, status=status.HTTP_202_ACCEPTED)

    @extend_schema(request=a.AgentRunResumeSerializer, responses={202: a.AgentRunSerializer, **ERRORS})
    @action(detail=True, methods=["post"])
    def resume(self, request, pk=None):
        """Queue a failed, cancelled or budget-stopped run again (its owner or a project admin; 409 otherwise): it
        skips the instances it stored and never asks the model again for what it answered. A new budget may be
        given."""
        run = self.get_object()
        form = a.AgentRunResumeSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        run = agent_actions.do_resume_agent_run(request.user, run, **form.validated_data)
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

    @extend_schema(request=None, responses={200: a.AgentRunInstanceSerializer(many=True), **ERRORS})
    @action(detail=True, methods=["get"], filter_backends=[])
    def instances(self, request, pk=None):
        """Every instance the run stored so far: its score, the model's answer (llm; the endpoint's key masked, at
        most ``MAX_ANSWER_CHARS`` characters) and ``unapplied``, what of the answer no field took, each with its line
        and why (calls naming a field the page does not have, fields not displayed, lines naming no field).
        Paginated."""
        run = self.get_object()
        page = self.paginate_queryset(run.instances.order_by("pk"))
        context = self.get_serializer_context()
        return self.get_paginated_response(a.AgentRunInstanceSerializer(page, many=True, context=context).data)


@extend_schema_view(retrieve=extend_schema(responses={200: a.ModelEndpointSerializer, **READ_ERRORS}))
class ModelEndpointViewSet(ModelsRoleMixin, OtherRoleForbiddenMixin, viewsets.ReadOnlyModelViewSet):
    """A project's OpenAI-compatible model endpoints (the llm solver, prediction runs). Researchers and admins of the
    project add, read and use them; the key is write-only. Only the one who added an endpoint (``owner``) or an
    admin of the project changes or removes it (403 for other researchers). Unless the platform allows it
    (``MODEL_ENDPOINTS_ALLOW_PRIVATE``), a URL whose host is or resolves to a loopback, private, link-local or other
    non-global address is a 400 naming ``url``."""

    model = ModelEndpoint
    serializer_class = a.ModelEndpointSerializer
    filterset_fields = {"project__name": ["exact"], "name": ["exact"]}

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):
            return ModelEndpoint.objects.none()
        return endpoint_actions.endpoints_readable_by(self.request.user).order_by("pk")

    @extend_schema(request=a.ModelEndpointCreateSerializer, responses={201: a.ModelEndpointSerializer, **ERRORS})
    def create(self, request):
        """Add an endpoint to a project (409 when the name is taken); you are its owner."""
        form = a.ModelEndpointCreateSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        data = dict(form.validated_data)
        project = endpoint_actions.check_project_for_models(request.user, data.pop("project"))
        endpoint = endpoint_actions.do_create_model_endpoint(request.user, project, **data)
        return Response(self.get_serializer(endpoint).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=a.ModelEndpointChangeSerializer, responses={200: a.ModelEndpointSerializer, **ERRORS})
    def partial_update(self, request, pk=None):
        """Change the URL, model, key or vision (its owner or a project admin; 403 otherwise). A key given replaces
        the stored one. **A new URL removes the stored key** unless a key is given in the same request, so a key is
        only ever sent to the URL it was given with: ``has_key`` in the answer says whether one is stored."""
        endpoint = self.get_object()
        endpoint_actions.check_endpoint_changeable(request.user, endpoint)
        form = a.ModelEndpointChangeSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        endpoint, _ = endpoint_actions.do_change_model_endpoint(request.user, endpoint, **form.validated_data)
        return Response(self.get_serializer(endpoint).data)

    @extend_schema(request=None, responses={204: None, **ERRORS})
    def destroy(self, request, pk=None):
        """Remove the endpoint (its owner or a project admin; 403 otherwise). Runs that used it keep their
        results."""
        endpoint_actions.do_delete_model_endpoint(request.user, self.get_object())
        return Response(status=status.HTTP_204_NO_CONTENT)


PROJECT = OpenApiParameter("project", str, OpenApiParameter.PATH, description="The project's name.")


@extend_schema_view(
    retrieve=extend_schema(parameters=[PROJECT], responses={200: a.ModelLimitsSerializer, **ERRORS}),
    partial_update=extend_schema(
        parameters=[PROJECT], request=a.ModelLimitsChangeSerializer, responses={200: a.ModelLimitsSerializer, **ERRORS}
    ),
)
class ModelLimitsViewSet(viewsets.GenericViewSet):
    """A project's model limits: the most an llm agent run or a prediction run may ask for (tokens per answer,
    requests in flight, browsers, seconds per request, instances) and the most bytes of a reply read. Researchers
    and admins of the project read them; its admins change them (403 for others)."""

    serializer_class = a.ModelLimitsSerializer
    lookup_field = "project"
    lookup_value_regex = "[-a-zA-Z0-9_]+"

    def get_queryset(self):
        return ModelLimits.objects.none()  # a project without a row has the defaults: see list and retrieve

    @extend_schema(responses={200: a.ModelLimitsSerializer(many=True), **ERRORS})
    def list(self, request):
        """The limits of every project where you are a researcher or admin, by project name. Paginated."""
        projects = Project.objects.for_user(request.user, actions.EXPORT_ROLES).order_by("name")
        stored = {limits.project_id: limits for limits in ModelLimits.objects.filter(project__in=projects)}
        rows = [stored.get(project.pk) or ModelLimits(project=project) for project in projects]
        page = self.paginate_queryset(rows)
        return self.get_paginated_response(a.ModelLimitsSerializer(page, many=True).data)

    def retrieve(self, request, project=None):
        """The project's limits (its defaults until an admin changes one)."""
        found = endpoint_actions.check_project_for_models(request.user, project)
        return Response(a.ModelLimitsSerializer(endpoint_actions.model_limits(found)).data)

    def partial_update(self, request, project=None):
        """Change some limits (a project admin); each out of its range is a 400 naming it."""
        found = endpoint_actions.check_project_for_models(request.user, project)
        endpoint_actions.check_limits_changeable(request.user, found)
        form = a.ModelLimitsChangeSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        limits = endpoint_actions.do_change_model_limits(request.user, found, **form.validated_data)
        return Response(a.ModelLimitsSerializer(limits).data)


@extend_schema_view(retrieve=extend_schema(responses={200: a.PredictionRunSerializer, **READ_ERRORS}))
class PredictionRunViewSet(ModelsRoleMixin, JobViewSetMixin, mixins.CreateModelMixin, viewsets.ReadOnlyModelViewSet):
    """Model predictions for a WebLINX or Mind2Web split of a project, from one of its model endpoints, evaluated
    in the same job. Researchers and admins of the project."""

    model = PredictionRun
    serializer_class = a.PredictionRunSerializer
    filterset_fields = {"project__name": ["exact"], "status": ["exact"], "format": ["exact"], "split": ["exact"]}

    def list(self, request, *args, **kwargs):
        prediction_actions.check_split_filter(request.query_params.get("split"))
        return super().list(request, *args, **kwargs)

    @extend_schema(request=a.PredictionRunCreateSerializer, responses={202: a.PredictionRunSerializer, **ERRORS})
    def create(self, request):
        """Start a run; 202 with it. Poll it; its predictions, failures, usage and results fill in when done. A
        split with no validated demonstrations is a 400 naming ``split``; settings above the project's model limits
        a 400 naming them."""
        form = a.PredictionRunCreateSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        data = dict(form.validated_data)
        project = endpoint_actions.check_project_for_models(request.user, data.pop("project"))
        fmt, split, endpoint, evaluate = (
            data.pop("format"),
            data.pop("split"),
            data.pop("endpoint"),
            data.pop("evaluate"),
        )
        run = prediction_actions.do_create_prediction_run(request.user, project, fmt, split, endpoint, data, evaluate)
        return Response(self.get_serializer(run).data, status=status.HTTP_202_ACCEPTED)

    @extend_schema(request=None, responses={200: PREDICTIONS_FILE, **ERRORS})
    @action(detail=True, methods=["get"], filter_backends=[])
    def predictions(self, request, pk=None):
        """The predictions file (a JSON list), as ``manage.py evaluate`` and ``POST /api/evaluations/`` take it."""
        run = self.get_object()
        return Response(run.predictions)
