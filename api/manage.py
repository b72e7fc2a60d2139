"""The manage API: the projects you are a member of (with your role; a project's split configuration and report and its
Mind2Web verification counts hang on it), and token sign-in for the recorder."""

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, viewsets
from rest_framework.authtoken.views import ObtainAuthToken
from rest_framework.decorators import action
from rest_framework.response import Response

from annotation import actions
from annotation.actions import mind2web
from annotation.actions.exports import splits as split_actions
from annotation.actions.manage import check_sign_in_allowed, client_address
from annotation.models import Project, Role, SplitConfig

from .exports.serializers import SplitConfigSerializer
from .mind2web.serializers import VerificationCountsSerializer
from .serializers import error_responses

ERRORS = error_responses(400, 403, 404, 409, 413)


class ProjectSerializer(serializers.ModelSerializer):
    role = serializers.SerializerMethodField(help_text="Your role in the project.")

    class Meta:
        model = Project
        fields = [
            "name",
            "title",
            "description",
            "role",
            "category_choices",
            "subcategory_choices",
            "region_choices",
            "created_at",
        ]

    def get_role(self, project) -> str | None:
        return project.role_of(self.context["request"].user)


class ProjectViewSet(viewsets.ReadOnlyModelViewSet):
    """Projects you are a member of, with your role in each."""

    serializer_class = ProjectSerializer
    lookup_field = "name"

    def get_queryset(self):
        return Project.objects.for_user(self.request.user)

    @extend_schema(
        methods=["GET"],
        parameters=[
            OpenApiParameter("statuses", str, description="Comma-separated demo statuses (default validated).")
        ],
        responses={200: OpenApiTypes.OBJECT},
    )
    @extend_schema(methods=["PUT", "PATCH"], request=SplitConfigSerializer, responses={200: OpenApiTypes.OBJECT})
    @action(detail=True, methods=["get", "put", "patch"])
    def splits(self, request, name=None):
        """The split configuration, per-split counts and the leakage report (WebLINX and Mind2Web schemes).
        Project admins change the configuration with PUT/PATCH."""
        project = self.get_object()
        config = SplitConfig.for_project(project)
        if request.method != "GET":
            if not project.has_role(request.user, (Role.ADMIN,)):
                raise actions.Forbidden("only project admins change the split configuration")
            form = SplitConfigSerializer(config, data=request.data, partial=request.method == "PATCH")
            form.is_valid(raise_exception=True)
            config = form.save()
        statuses = split_statuses(request)
        return Response(
            {
                "config": SplitConfigSerializer(config).data,
                "statuses": statuses,
                **split_actions.split_reports(project, statuses),
            }
        )

    @extend_schema(responses={200: VerificationCountsSerializer, **ERRORS})
    @action(detail=True, methods=["get"])
    def verification(self, request, name=None):
        """Mind2Web verification counts: tasks, tasks discarded, descriptions refined, tasks with steps discarded
        (reviewers, researchers and admins)."""
        project = self.get_object()
        if not project.has_role(request.user, (Role.REVIEWER, Role.RESEARCHER, Role.ADMIN)):
            raise actions.Forbidden("your role cannot see the verification counts")
        return Response(mind2web.verification_counts(project))


def split_statuses(request) -> list[str]:
    raw = request.query_params.get("statuses") or "validated"
    statuses = [status_name.strip() for status_name in raw.split(",") if status_name.strip()]
    for index, name in enumerate(statuses):
        actions.check_choice(f"statuses[{index}]", name, actions.STATUS_CHOICES)
    return statuses


class TokenSignInView(ObtainAuthToken):
    """``{"username", "password"}`` → ``{"token"}``: the recorder's credential. Throttled like the sign-in page
    (429 with ``Retry-After`` after too many failures for a username from one address)."""

    def post(self, request, *args, **kwargs):
        username = request.data.get("username", "") if isinstance(request.data, dict) else ""
        check_sign_in_allowed(str(username), client_address(request))
        return super().post(request, *args, **kwargs)
