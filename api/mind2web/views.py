"""The Mind2Web collection API: websites and seed tasks, proposal rounds, proposals and their review, and the
demonstration tasks the recorder's side panel lists and starts. Thin: each view calls
``annotation.actions.mind2web``; every input check names its field there."""

from django.db.models import Q
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.actions import ValidationFailed
from annotation.actions import mind2web as m2w
from annotation.actions.manage import check_project_role
from annotation.models import Assignment, Project, ProposalRound, ProposedTask, Role, Website

from ..parsers import LimitedJSONParser
from ..recordings.serializers import DemonstrationSerializer
from ..recordings.views import RecordingViewSet
from ..serializers import error_responses
from . import serializers as ms

ERRORS = error_responses(400, 403, 404, 409)
PROJECT_PARAMETER = OpenApiParameter("project", str, required=True, description="The project's name.")


def body_object(request) -> dict:
    if not isinstance(request.data, dict):
        raise ValidationFailed("expected a JSON object", [{"field": "body", "message": "expected an object"}])
    return request.data


def required_project(request, field="project") -> str:
    value = request.query_params.get(field) or (request.data.get(field) if isinstance(request.data, dict) else None)
    if not isinstance(value, str) or not value:
        raise ValidationFailed(f"{field} is required", [{"field": field, "message": "required"}])
    return value


def uploaded(request, field="file"):
    upload = request.FILES.get(field)
    if upload is None:
        raise ValidationFailed(f"{field} is required", [{"field": field, "message": "a file is required"}])
    return upload.read(), upload.name or ""


class WebsiteViewSet(mixins.CreateModelMixin, mixins.UpdateModelMixin, viewsets.ReadOnlyModelViewSet):
    """Websites of your projects with their target, accepted tasks and seed tasks (researchers and admins manage
    them; every member reads them)."""

    lookup_value_regex = "[0-9]+"
    serializer_class = ms.WebsiteSerializer
    parser_classes = [LimitedJSONParser, MultiPartParser, FormParser]
    filterset_fields = {"project__name": ["exact"], "domain": ["exact"]}
    http_method_names = ["get", "post", "patch", "head", "options"]

    def get_queryset(self):
        return (
            Website.objects.filter(project__in=Project.objects.for_user(self.request.user))
            .select_related("project")
            .with_counts()
            .order_by("project__name", "name")
        )

    def annotated(self, website):
        return self.get_queryset().get(pk=website.pk)

    @extend_schema(request=ms.WebsiteInSerializer, responses={201: ms.WebsiteSerializer, **ERRORS})
    def create(self, request):
        """Add a website (researchers and admins of ``project``); every problem names its field."""
        data = dict(body_object(request))
        project = m2w.check_project_for_websites(request.user, required_project(request))
        data.pop("project", None)
        website = m2w.do_create_website(project, data)
        return Response(self.get_serializer(self.annotated(website)).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=ms.WebsiteInSerializer, responses={200: ms.WebsiteSerializer, **ERRORS})
    def partial_update(self, request, pk=None):
        """Change a website (researchers and admins)."""
        website = m2w.managed_website(request.user, self.get_object().pk)
        data = {key: value for key, value in body_object(request).items() if key != "project"}
        website = m2w.do_update_website(website, data)
        return Response(self.get_serializer(self.annotated(website)).data)

    @extend_schema(
        request={"multipart/form-data": ms.WebsiteImportSerializer},
        responses={201: ms.WebsiteImportedSerializer, **ERRORS},
    )
    @action(detail=False, methods=["post"], url_path="import")
    def import_file(self, request):
        """Import websites from a CSV (with a header) or JSON file; one bad row stores nothing and is named
        (``rows[3].url``)."""
        project = m2w.check_project_for_websites(request.user, required_project(request))
        data, filename = uploaded(request)
        created = m2w.do_import_websites(project, data, filename)
        websites = self.get_queryset().filter(pk__in=[w.pk for w in created])
        body = {"created": len(created), "websites": self.get_serializer(websites, many=True).data}
        return Response(body, status=status.HTTP_201_CREATED)

    @extend_schema(parameters=[PROJECT_PARAMETER], responses={200: ms.WebsiteSerializer(many=True), **ERRORS})
    @action(detail=False, methods=["get"], pagination_class=None)
    def offered(self, request):
        """The websites of ``project`` you may propose tasks for now: under their target, not yet done by you."""
        project = m2w.check_project_for_demonstrating(request.user, required_project(request))
        offered = m2w.offered_websites(request.user, project).values("pk")
        return Response(self.get_serializer(self.get_queryset().filter(pk__in=offered), many=True).data)

    @extend_schema(methods=["GET"], responses={200: ms.SeedTaskSerializer(many=True), **ERRORS})
    @extend_schema(
        methods=["POST"],
        request={"application/json": ms.SeedTasksInSerializer, "multipart/form-data": ms.SeedTasksInSerializer},
        responses={201: ms.SeedTasksAddedSerializer, **ERRORS},
    )
    @action(detail=True, methods=["get", "post"], url_path="seed-tasks", pagination_class=None)
    def seed_tasks(self, request, pk=None):
        """GET: the website's seed tasks. POST (researchers, admins): add seed tasks, as JSON ``{"tasks": [...]}`` or
        a ``file``; each is checked (``tasks[2]``: empty, over 500 characters); ones it has are skipped."""
        website = self.get_object()
        if request.method == "GET":
            return Response(ms.SeedTaskSerializer(website.seed_tasks.all(), many=True).data)
        website = m2w.managed_website(request.user, website.pk)
        if "file" in request.FILES:
            texts = m2w.seed_texts_of_file(*uploaded(request))
        else:
            texts = body_object(request).get("tasks")
        created = m2w.do_add_seed_tasks(website, texts)
        return Response({"created": len(created)}, status=status.HTTP_201_CREATED)


class ProposalRoundViewSet(mixins.CreateModelMixin, viewsets.ReadOnlyModelViewSet):
    """Your proposal rounds: start one on an offered website (10 seed tasks drawn for it), then submit up to 5
    tasks, each screened against the website's seed and accepted tasks."""

    lookup_value_regex = "[0-9]+"
    serializer_class = ms.RoundSerializer

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):
            return ProposalRound.objects.none()
        return (
            ProposalRound.objects.filter(proposer=self.request.user)
            .select_related("website__project", "assignment")
            .prefetch_related("proposals__website", "proposals__proposer", "proposals__reviewer")
            .order_by("-created_at", "-pk")
        )

    @extend_schema(request=ms.RoundStartSerializer, responses={201: ms.RoundSerializer, **ERRORS})
    def create(self, request):
        """Start proposing for a website (or get your open round on it): 409 when it reached its target."""
        form = ms.RoundStartSerializer(data=body_object(request))
        form.is_valid(raise_exception=True)
        website = m2w.visible_website(request.user, form.validated_data["website"])
        proposal_round = m2w.do_start_round(request.user, website)
        return Response(self.get_serializer(self.get_queryset().get(pk=proposal_round.pk)).data, status=201)

    @extend_schema(request=ms.RoundSubmitSerializer, responses={201: ms.RoundSerializer, **ERRORS})
    @action(detail=True, methods=["post"])
    def submit(self, request, pk=None):
        """Submit the round's proposed tasks (1 to 5; more, an empty or an over-long one is a 400 naming it)."""
        m2w.do_submit_round(request.user, pk, body_object(request).get("tasks"))
        return Response(self.get_serializer(self.get_queryset().get(pk=pk)).data, status=201)


class ProposalViewSet(viewsets.ReadOnlyModelViewSet):
    """Proposed tasks: yours, and those of the projects you screen (filter ``status``, ``website``,
    ``project``); reviewers and admins screen them: accept (possibly edited) or reject."""

    lookup_value_regex = "[0-9]+"
    serializer_class = ms.ProposalSerializer
    filterset_fields = {"status": ["exact"], "website": ["exact"], "website__project__name": ["exact"]}

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):
            return ProposedTask.objects.none()
        user = self.request.user
        reviewed = Project.objects.for_user(user, m2w.proposals.REVIEW_ROLES)
        return (
            ProposedTask.objects.filter(Q(proposer=user) | Q(website__project__in=reviewed))
            .select_related("website", "proposer", "reviewer")
            .order_by("created_at", "pk")
        )

    @extend_schema(request=ms.ScreenSerializer, responses={200: ms.ProposalSerializer, **ERRORS})
    @action(detail=True, methods=["post"])
    def screen(self, request, pk=None):
        """Screening: accept (``text``: the edited task, blank = as proposed) or reject a pending proposal. Accepting
        makes a demonstration task, assigned to the proposer unless the project sends them to the pool."""
        m2w.check_proposal_screenable(request.user, pk)  # a proposal not yours to screen: 404/403 whatever the body
        data = body_object(request)
        proposal = m2w.do_screen(request.user, pk, data.get("decision"), data.get("text"))
        return Response(self.get_serializer(self.get_queryset().get(pk=proposal.pk)).data)

    @extend_schema(exclude=True)
    @action(detail=True, methods=["post"], url_path="review")
    def review(self, request, pk=None):
        """``…/review/``: the old path of ``…/screen/``, kept for one release (docs/api.md)."""
        return self.screen(request, pk)


class DemonstrationTaskViewSet(viewsets.ReadOnlyModelViewSet):
    """Your assigned demonstration tasks (accepted proposals), as the recorder's side panel lists them; ``start``
    one to begin its recording."""

    lookup_value_regex = "[0-9]+"
    serializer_class = ms.DemonstrationTaskSerializer
    pagination_class = None
    filterset_fields = {"task__batch__project__name": ["exact"]}

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):
            return Assignment.objects.none()
        return m2w.assigned_demonstrations(self.request.user)

    @extend_schema(request=ms.DemonstrationTakeSerializer, responses={201: ms.DemonstrationTaskSerializer, **ERRORS})
    @action(detail=False, methods=["post"])
    def take(self, request):
        """Take the next demonstration task of ``project``'s pool (or get your oldest assigned one)."""
        project = m2w.check_project_for_demonstrating(request.user, required_project(request))
        assignment = m2w.do_take_from_pool(request.user, project)
        return Response(self.get_serializer(self.get_queryset().get(pk=assignment.pk)).data, status=201)

    @extend_schema(
        request=ms.DemonstrationStartSerializer,
        responses={201: DemonstrationSerializer, 200: DemonstrationSerializer, **ERRORS},
    )
    @action(detail=True, methods=["post"])
    def start(self, request, pk=None):
        """Start the task-mode recording of this task: task, website, domain and subdomain filled in, linked to
        the task. Re-sending the same ``client_id`` returns the same recording (200)."""
        m2w.check_demonstration_of(request.user, pk)  # a task not yours: 404 whatever the body
        form = ms.DemonstrationStartSerializer(data=body_object(request))
        form.is_valid(raise_exception=True)
        demo, created = m2w.do_start_demonstration(request.user, pk, **form.validated_data)
        recordings = RecordingViewSet(request=request, format_kwarg=None).get_queryset()
        body = DemonstrationSerializer(recordings.get(pk=demo.pk)).data
        return Response(body, status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)


class ProjectVerificationView(APIView):
    """``/api/projects/<name>/verification/``: Mind2Web verification counts: tasks, tasks discarded, descriptions
    refined, tasks with steps discarded (reviewers, researchers and admins)."""

    @extend_schema(
        operation_id="projects_verification_retrieve", responses={200: ms.VerificationCountsSerializer, **ERRORS}
    )
    def get(self, request, name):
        roles = (Role.REVIEWER, Role.RESEARCHER, Role.ADMIN)
        project = check_project_role(request.user, name, roles, "see the verification counts")
        return Response(m2w.verification_counts(project))
