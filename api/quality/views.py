"""The quality API: decisions on submitted form work (``/api/decisions/``: list, approve, reject, reopen, decide in
bulk or by
filter, upload the results CSV back), qualifications (create, grant, revoke), and a batch's quality settings and gold
tasks. Thin: each view checks with ``annotation.actions`` and calls one action."""

from django.conf import settings
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import mixins, viewsets
from rest_framework.decorators import action
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.response import Response

from annotation.actions import forms, quality
from annotation.actions.errors import invalid
from annotation.models import Batch, Project, Qualification

from ..parsers import LimitedJSONParser
from ..serializers import error_responses
from . import serializers as qs

ERRORS = error_responses(400, 403, 404, 409)
FILTERS = ("worker", "review", "flagged", "gold_below", "gold_at_least")


class DecisionViewSet(viewsets.GenericViewSet, mixins.ListModelMixin):
    """Submitted form work of the batches you manage (researchers, admins), with its review state and gold figures.
    Decisions on another project's work are 404, by a worker 403, on work not submitted 409."""

    serializer_class = qs.ReviewSerializer
    lookup_value_regex = r"\d+"

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):
            return quality.review_queryset().none()
        rows = quality.reviewable_by(self.request.user)
        params = self.request.query_params
        if params.get("batch"):
            if not params["batch"].isdecimal():
                raise invalid("batch", "expected a batch id")
            rows = rows.filter(task__batch=forms.check_batch_manageable(self.request.user, int(params["batch"])))
        return quality.filtered(rows, **{key: params.get(key) for key in FILTERS})

    def paginate_queryset(self, queryset):
        """The page's rows with their workers' gold accuracy (one query for the page)."""
        page = super().paginate_queryset(queryset)
        return None if page is None else quality.with_worker_gold(page)

    def shown(self, pk) -> Response:
        """One submitted assignment as the reviewer reads it, its worker's gold accuracy and its trail included."""
        (assignment,) = quality.with_worker_gold([quality.review_queryset().get(pk=pk)])
        assignment.trail = quality.trail_rows(assignment.pk)
        return Response(qs.ReviewDetailSerializer(assignment).data)

    @extend_schema(
        parameters=[
            OpenApiParameter("batch", int, description="One batch (403 when you cannot manage it)."),
            OpenApiParameter("worker", str, description="A worker's username."),
            OpenApiParameter("review", str, enum=["pending", "approved", "rejected"]),
            OpenApiParameter("flagged", bool, description="Flagged for review (their worker was blocked) or not."),
            OpenApiParameter(
                "gold_below", float, description="Workers whose gold accuracy in the batch (0–1) is below this."
            ),
            OpenApiParameter("gold_at_least", float, description="Workers whose gold accuracy is at least this."),
        ],
        responses={200: qs.ReviewSerializer(many=True), **ERRORS},
    )
    def list(self, request, *args, **kwargs):
        """Submitted work, oldest task first, narrowed by the filters (a bad value is a 400 naming it)."""
        return super().list(request, *args, **kwargs)

    @extend_schema(responses={200: qs.ReviewDetailSerializer, **ERRORS})
    def retrieve(self, request, pk=None):
        """One submitted assignment, with its decision trail."""
        (assignment,) = quality.check_reviewable(request.user, [int(pk)])
        return self.shown(assignment.pk)

    def decided(self, request, pk, decision):
        form = qs.FeedbackSerializer(data=request.data if isinstance(request.data, dict) else {})
        form.is_valid(raise_exception=True)
        assignments = quality.check_reviewable(request.user, [int(pk)])
        quality.do_decide(request.user, assignments, decision, form.validated_data.get("feedback", ""))
        return self.shown(int(pk))

    @extend_schema(request=qs.FeedbackSerializer, responses={200: qs.ReviewDetailSerializer, **ERRORS})
    @action(detail=True, methods=["post"])
    def approve(self, request, pk=None):
        """Approve this work (feedback optional)."""
        return self.decided(request, pk, "approve")

    @extend_schema(request=qs.FeedbackSerializer, responses={200: qs.ReviewDetailSerializer, **ERRORS})
    @action(detail=True, methods=["post"])
    def reject(self, request, pk=None):
        """Reject this work; ``feedback`` (required) is the reason the worker sees in their history."""
        return self.decided(request, pk, "reject")

    @extend_schema(request=None, responses={200: qs.ReviewDetailSerializer, **ERRORS})
    @action(detail=True, methods=["post"])
    def reopen(self, request, pk=None):
        """Give a rejected assignment's slot back to the queue, for another worker."""
        (assignment,) = quality.check_reviewable(request.user, [int(pk)])
        quality.do_reopen(request.user, assignment)
        return self.shown(assignment.pk)

    @extend_schema(request=qs.UndoSerializer, responses={200: qs.ReviewDetailSerializer, **ERRORS})
    @action(detail=True, methods=["post"])
    def undo(self, request, pk=None):
        """Undo a decision (``decision``: a trail entry's id; default the latest that stands) within
        ``FORM_DECISION_UNDO_MINUTES`` of it: an approval or rejection goes back to pending, a reopen takes its slot
        back. 409 past the window, for a decision already undone or superseded by a later one, or a reopened slot
        another worker took."""
        (assignment,) = quality.check_reviewable(request.user, [int(pk)])
        form = qs.UndoSerializer(data=request.data if isinstance(request.data, dict) else {})
        form.is_valid(raise_exception=True)
        target = quality.check_undo_target(assignment, form.validated_data.get("decision"))
        quality.do_undo(request.user, assignment, target, quality.check_reason(form.validated_data.get("reason")))
        return self.shown(assignment.pk)

    @extend_schema(request=qs.DecideSerializer, responses={200: qs.DecidedSerializer, **ERRORS})
    @action(detail=False, methods=["post"])
    def decide(self, request):
        """Approve or reject in bulk: ``assignments`` (all or none: any refused one refuses them all), or the
        pending work a ``filter`` selects in one batch (work already decided is left as it is). Answers how many
        changed. With a filter, ``dry_run`` answers how many pending rows it selects and their ``selection`` digest;
        give that ``selection`` back to act on exactly those rows (409, nothing decided, when they changed)."""
        form = qs.DecideSerializer(data=request.data if isinstance(request.data, dict) else {})
        form.is_valid(raise_exception=True)
        data = form.validated_data
        decision, feedback = data["decision"], data.get("feedback", "")
        if "assignments" in data:
            assignments = quality.check_reviewable(request.user, data["assignments"])
            return Response({"changed": quality.do_decide(request.user, assignments, decision, feedback)})
        chosen = dict(data["filter"])
        batch = forms.check_batch_manageable(request.user, chosen.pop("batch"))
        rows = quality.filtered(quality.review_queryset().filter(task__batch=batch), **chosen)
        if data["dry_run"]:
            quality.check_decision(decision, feedback)
            ids, selection = quality.pending_selection(rows, request.user)
            return Response({"changed": 0, "selected": len(ids), "selection": selection})
        selection = quality.check_selection(data.get("selection"))
        return Response(
            {"changed": quality.do_decide_filtered(request.user, rows, decision, feedback, selection=selection)}
        )

    @extend_schema(
        request={"multipart/form-data": qs.DecisionsUploadSerializer},
        responses={200: qs.DecisionsAppliedSerializer, **error_responses(400, 403, 404, 413)},
    )
    @action(detail=False, methods=["post"], parser_classes=[MultiPartParser, FormParser])
    def upload(self, request):
        """Upload the batch's results CSV back with ``Approve`` = ``x`` or a ``Reject`` reason per row: every
        decision is applied, or none (400 naming each bad row: an unknown assignment, both columns, a decision
        against one already taken)."""
        form = qs.DecisionsUploadSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        batch = forms.check_batch_manageable(request.user, form.validated_data["batch"])
        data = form.validated_data["csv"].read(settings.FORM_CSV_MAX_BYTES + 1)
        return Response(quality.do_apply_decisions_csv(request.user, batch, data))


@extend_schema(exclude=True)
class DecisionAliasViewSet(DecisionViewSet):
    """``/api/reviews/``: the old path of ``/api/decisions/``, kept for one release (docs/api.md), not in the
    schema."""


class QualificationViewSet(viewsets.GenericViewSet, mixins.ListModelMixin, mixins.RetrieveModelMixin):
    """Qualifications of your projects (researchers and admins read them; admins create, grant and revoke)."""

    serializer_class = qs.QualificationSerializer
    lookup_value_regex = r"\d+"
    parser_classes = [LimitedJSONParser]
    filterset_fields = {"project__name": ["exact"]}

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):
            return Qualification.objects.none()
        projects = Project.objects.for_user(self.request.user, forms.MANAGE_ROLES)
        return (
            Qualification.objects.filter(project__in=projects)
            .select_related("project")
            .prefetch_related("scores__worker", "scores__granted_by")
        )

    @extend_schema(request=qs.QualificationCreateSerializer, responses={201: qs.QualificationSerializer, **ERRORS})
    def create(self, request):
        """Create a qualification in a project (admins)."""
        form = qs.QualificationCreateSerializer(data=request.data if isinstance(request.data, dict) else {})
        form.is_valid(raise_exception=True)
        data = form.validated_data
        project = quality.check_project_qualifications(request.user, data["project"], write=True)
        name = quality.check_new_name(project, data["name"])
        made = quality.do_create_qualification(project, name, data.get("description", ""))
        return Response(self.get_serializer(self.get_queryset().get(pk=made.pk)).data, status=201)

    def changed(self, pk):
        return Response(self.get_serializer(self.get_queryset().get(pk=pk)).data)

    @extend_schema(request=qs.GrantSerializer, responses={200: qs.QualificationSerializer, **ERRORS})
    @action(detail=True, methods=["post"])
    def grant(self, request, pk=None):
        """Grant the qualification to a member (``score`` 0–1, default 1), or change their score (admins)."""
        qualification = quality.check_qualification(request.user, pk, write=True)
        form = qs.GrantSerializer(data=request.data if isinstance(request.data, dict) else {})
        form.is_valid(raise_exception=True)
        worker = quality.check_worker(qualification, form.validated_data["worker"])
        quality.do_grant(qualification, worker, form.validated_data["score"], request.user)
        return self.changed(qualification.pk)

    @extend_schema(request=qs.RevokeSerializer, responses={200: qs.QualificationSerializer, **ERRORS})
    @action(detail=True, methods=["post"])
    def revoke(self, request, pk=None):
        """Take the qualification away from a member (admins)."""
        qualification = quality.check_qualification(request.user, pk, write=True)
        form = qs.RevokeSerializer(data=request.data if isinstance(request.data, dict) else {})
        form.is_valid(raise_exception=True)
        quality.do_revoke(qualification, quality.check_worker(qualification, form.validated_data["worker"]))
        return self.changed(qualification.pk)


class BatchQualityViewSet(viewsets.GenericViewSet):
    """A form batch's quality settings (gold rate, blocking threshold, onboarding, required qualifications,
    auto-approval delay) and its gold tasks; ``{batch id}`` as in ``/api/batches/``."""

    parser_classes = [LimitedJSONParser]
    serializer_class = qs.QualitySettingsSerializer
    lookup_value_regex = r"\d+"

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):
            return Batch.objects.none()
        projects = Project.objects.for_user(self.request.user, forms.MANAGE_ROLES)
        return Batch.objects.forms().filter(project__in=projects).select_related("grants_qualification")

    @extend_schema(responses={200: qs.QualitySettingsSerializer(many=True), **ERRORS})
    def list(self, request):
        """The quality settings of every form batch you manage, newest first."""
        page = self.paginate_queryset(self.get_queryset().order_by("-created_at", "-pk"))
        return self.get_paginated_response([quality.quality_settings(batch) for batch in page])

    @extend_schema(responses={200: qs.QualitySettingsSerializer, **ERRORS})
    def retrieve(self, request, pk=None):
        """The settings, the gold tasks' indices, work by review state and the blocked workers."""
        batch = forms.check_batch_manageable(request.user, int(pk))
        return Response(quality.quality_settings(batch))

    @extend_schema(request=qs.QualitySettingsSerializer, responses={200: qs.QualitySettingsSerializer, **ERRORS})
    def partial_update(self, request, pk=None):
        """Change some settings; a rate or threshold outside 0–1, or an unknown qualification, is a 400 naming it."""
        batch = forms.check_batch_manageable(request.user, int(pk))
        values = quality.check_quality_settings(batch, request.data)
        batch = quality.do_update_quality_settings(batch, values)
        return Response(quality.quality_settings(Batch.objects.get(pk=batch.pk)))

    @extend_schema(request=qs.UnblockSerializer, responses={200: qs.QualitySettingsSerializer, **ERRORS})
    @action(detail=True, methods=["post"])
    def unblock(self, request, pk=None):
        """Unblock a worker the batch's gold blocked: ``{"worker": username, "reason"}`` (the worker reads the
        reason on their work page). 409 when they are not blocked from the batch. The lift is kept with who, when
        and why (``unblocked``)."""
        batch = forms.check_batch_manageable(request.user, int(pk))
        data = request.data if isinstance(request.data, dict) else {}
        worker, reason = quality.check_unblock(batch, data.get("worker"), data.get("reason"))
        quality.do_unblock(request.user, batch, worker, reason)
        return Response(quality.quality_settings(Batch.objects.get(pk=batch.pk)))

    @extend_schema(request=qs.GoldSerializer, responses={200: qs.GoldMarkedSerializer, **ERRORS})
    @action(detail=True, methods=["post"])
    def gold(self, request, pk=None):
        """Mark tasks as gold with their CSV ``Answer.*`` values (``tasks``: indices; ``gold: false`` unmarks), or
        one task with the answers of a submitted ``assignment``."""
        batch = forms.check_batch_manageable(request.user, int(pk))
        return Response({"changed": quality.do_mark_gold(batch, quality.check_gold_request(batch, request.data))})
