"""The manage API: the projects you are a member of (with your role), their invitation links (project admins), and
token sign-in for the recorder. A project's splits (``api/exports``) and Mind2Web verification counts
(``api/mind2web``) live under ``/api/projects/<name>/`` in their own areas."""

from django.urls import reverse
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status, viewsets
from rest_framework.authtoken.views import ObtainAuthToken
from rest_framework.decorators import action
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response

from annotation.actions import manage
from annotation.actions.manage import check_sign_in_allowed, client_address
from annotation.models import Project, ProjectInvitation, Role

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
            "record_traffic",
            "created_at",
        ]
        read_only_fields = fields

    def get_role(self, project) -> str | None:
        return project.role_of(self.context["request"].user)


class InvitationSerializer(serializers.ModelSerializer):
    state = serializers.CharField(read_only=True, help_text="open, used, revoked or expired.")
    created_by = serializers.SlugRelatedField(slug_field="username", read_only=True)
    used_by = serializers.CharField(source="used_by.username", read_only=True, allow_null=True, default=None)

    class Meta:
        model = ProjectInvitation
        fields = [
            "id",
            "role",
            "email",
            "note",
            "state",
            "created_by",
            "created_at",
            "expires_at",
            "used_at",
            "used_by",
            "revoked_at",
        ]


class InvitationCreateSerializer(serializers.Serializer):
    role = serializers.ChoiceField(choices=Role.choices)
    days = serializers.IntegerField(min_value=1, max_value=30, default=7, help_text="How long the link works.")
    email = serializers.EmailField(required=False, allow_blank=True, default="", help_text="Mailed there, with mail.")
    note = serializers.CharField(required=False, allow_blank=True, default="", max_length=200)


class NewInvitationSerializer(InvitationSerializer):
    link = serializers.CharField(help_text="The invitation link: returned only now, only its digest is kept.")
    mailed = serializers.BooleanField(help_text="Whether the link was mailed to ``email``.")

    class Meta(InvitationSerializer.Meta):
        fields = [*InvitationSerializer.Meta.fields, "link", "mailed"]


class ProjectInvitationsMixin:
    """``/api/projects/<name>/invitations/``: invitation links to the project (project admins and site admins)."""

    @extend_schema(methods=["GET"], responses={200: InvitationSerializer(many=True), **ERRORS})
    @extend_schema(
        methods=["POST"], request=InvitationCreateSerializer, responses={201: NewInvitationSerializer, **ERRORS}
    )
    @action(detail=True, methods=["get", "post"], pagination_class=None)  # every link of one project, one list
    def invitations(self, request, name=None):
        """Invitation links with their state (GET); a new one (POST ``{"role", "days", "email", "note"}``): its link
        is in this answer only, and mailed to ``email`` when mail is configured."""
        project = manage.check_project_admin(request.user, name)
        if request.method == "GET":
            rows = project.invitations.select_related("created_by", "used_by")
            return Response(InvitationSerializer(rows, many=True).data)
        form = InvitationCreateSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        data = form.validated_data
        invitation, token = manage.do_create_invitation(
            project, request.user, data["role"], data["days"], data["email"], data["note"]
        )
        link = request.build_absolute_uri(reverse("manage-join", args=[token]))
        mailed = manage.do_mail_invitation(invitation, link)
        answer = {**InvitationSerializer(invitation).data, "link": link, "mailed": mailed}
        return Response(answer, status=status.HTTP_201_CREATED)

    @extend_schema(methods=["GET", "DELETE"], responses={200: InvitationSerializer, **ERRORS})
    @action(detail=True, methods=["get", "delete"], url_path=r"invitations/(?P<invitation_id>\d+)")
    def invitation(self, request, name=None, invitation_id=None):
        """One invitation link's state (GET); DELETE revokes it: it stops working (409 when it was used already)."""
        project = manage.check_project_admin(request.user, name)
        if request.method == "GET":
            return Response(InvitationSerializer(manage.check_project_invitation(project, invitation_id)).data)
        return Response(InvitationSerializer(manage.do_revoke_invitation(project, invitation_id)).data)


class ProjectSettingsSerializer(serializers.Serializer):
    record_traffic = serializers.BooleanField(
        help_text="WebLINX recordings keep the tab's traffic as HAR per action turn (docs/recorder.md#raw-dump)."
    )


class ProjectViewSet(ProjectInvitationsMixin, viewsets.ReadOnlyModelViewSet):
    """Projects you are a member of, with your role in each. ``PATCH`` (project admins) sets ``record_traffic``."""

    serializer_class = ProjectSerializer
    lookup_field = "name"

    def get_queryset(self):
        return Project.objects.for_user(self.request.user)

    @extend_schema(request=ProjectSettingsSerializer, responses={200: ProjectSerializer, **ERRORS})
    def partial_update(self, request, name=None):
        """Change the project's settings (admins): ``{"record_traffic": true|false}``."""
        project = manage.check_project_admin(request.user, name)
        body = request.data if isinstance(request.data, dict) else {}
        manage.do_set_record_traffic(project, body.get("record_traffic"))
        return Response(ProjectSerializer(project, context={"request": request}).data)


class TokenOwnerSerializer(serializers.Serializer):
    username = serializers.CharField(help_text="The account the token belongs to.")


class TokenSignInView(ObtainAuthToken):
    """``{"username", "password"}`` → ``{"token"}``: the recorder's credential. Throttled like the sign-in page
    (429 with ``Retry-After`` after too many failures for a username from one address). ``GET`` with a token says
    whose it is (the recorder's "signed in as")."""

    def get_permissions(self):
        return [IsAuthenticated()] if self.request.method == "GET" else []

    @extend_schema(responses={200: TokenOwnerSerializer, **error_responses(401)})
    def get(self, request, *args, **kwargs):
        """``{"username"}`` of the account whose token (or session) signs the request; 401 without a valid one."""
        return Response({"username": request.user.get_username()})

    def post(self, request, *args, **kwargs):
        username = request.data.get("username", "") if isinstance(request.data, dict) else ""
        check_sign_in_allowed(str(username), client_address(request))
        return super().post(request, *args, **kwargs)
