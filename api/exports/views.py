"""The exports API: each view declares its queryset, serializer and permissions and calls ``annotation.actions``."""

from django.db.models import Count
from django.http import Http404, HttpResponseRedirect
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation import actions
from annotation.actions.exports import splits as split_actions
from annotation.actions.manage import check_project_role
from annotation.lib.formats import ARCHIVE_MEDIA_TYPES
from annotation.lib.splits import SPLITS
from annotation.models import Demonstration, Evaluation, ExportJob, Project, Role, SplitConfig
from annotation.store.blobstore import presigned_download_url

from ..downloads import RANGE_ERRORS, file_download
from ..serializers import ErrorSerializer, error_responses
from . import serializers as s
from .filters import EvaluationFilter, ExportJobFilter

ERRORS = error_responses(400, 403, 404, 409, 413)
READ_ERRORS = error_responses(403, 404)  # 403: another role of the job's project


class DemonstrationViewSet(viewsets.ReadOnlyModelViewSet):
    """Demonstrations of your projects with their split; filter by project, split, status, website, category."""

    serializer_class = s.DemonstrationSummarySerializer
    lookup_field = "name"
    filterset_fields = {
        "project__name": ["exact"],
        "status": ["exact"],
        "category": ["exact"],
        "subcategory": ["exact"],
        "region": ["exact"],
    }

    def get_queryset(self):
        return (
            Demonstration.objects.visible_to(self.request.user)
            .select_related("project", "navigator", "instructor")
            .annotate(turn_count=Count("turns"))
            .order_by("project__name", "name")
        )

    @extend_schema(
        parameters=[
            OpenApiParameter("split", str, description="Only demos in this split."),
            OpenApiParameter(
                "scheme", str, enum=["weblinx", "mind2web"], description="Split scheme (default weblinx)."
            ),
            OpenApiParameter("website", str, description="Only demos that visited this website."),
        ]
    )
    def list(self, request):
        demos = self.with_splits(self.filter_queryset(self.get_queryset()))
        page = self.paginate_queryset(demos)
        return self.get_paginated_response(self.get_serializer(page, many=True).data)

    def retrieve(self, request, name=None):
        return Response(self.get_serializer(self.with_splits([self.get_object()])[0]).data)

    def with_splits(self, demos) -> list:
        """Give each demo its split (under its project's configuration) and apply the split/website filters."""
        scheme = self.request.query_params.get("scheme") or "weblinx"
        actions.check_choice("scheme", scheme, ("weblinx", "mind2web"))
        wanted_split, website = self.request.query_params.get("split"), self.request.query_params.get("website")
        if wanted_split:
            actions.check_choice("split", wanted_split, SPLITS[scheme])
        split_of, result = {}, []
        for demo in demos:
            if demo.project_id not in split_of:
                split_of[demo.project_id] = split_actions.split_of(demo.project, scheme)
            demo.split = split_of[demo.project_id](demo)
            if (not wanted_split or demo.split == wanted_split) and (not website or website in demo.websites):
                result.append(demo)
        return result


# --- Export jobs and evaluations ------------------------------------------------------------------------


class OtherRoleForbiddenMixin:
    """An object of a project where you have a role that may not read it is a 403 saying who may (api.md: 403 your
    role cannot); outside your projects it stays a 404. ``check_not_other_role`` names the objects' roles."""

    model = None

    def check_not_other_role(self, pk) -> None:
        actions.check_job_not_other_role(self.request.user, self.model.objects, pk)

    def get_object(self):
        try:
            return super().get_object()
        except Http404:
            self.check_not_other_role(self.kwargs.get("pk"))
            raise


class JobViewSetMixin(OtherRoleForbiddenMixin):
    """Jobs of projects where you may export; stale running jobs are marked failed when looked at."""

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):
            return self.model.objects.none()
        actions.reap_stale_jobs(self.model)
        projects = Project.objects.for_user(self.request.user, actions.EXPORT_ROLES)
        return self.model.objects.filter(project__in=projects).select_related("project", "owner")

    @extend_schema(request=None, responses={200: None, **ERRORS})
    @action(detail=True, methods=["post"])
    def cancel(self, request, pk=None):
        """Cancel a queued or running job (409 when it has already ended): its owner or an admin of its project;
        another researcher of the project gets 403."""
        job = self.get_object()
        actions.check_job_cancellable(request.user, job)
        job = actions.do_cancel_job(job)
        return Response(self.get_serializer(job).data)


@extend_schema_view(retrieve=extend_schema(responses={200: s.ExportJobSerializer, **READ_ERRORS}))
class ExportJobViewSet(JobViewSetMixin, mixins.CreateModelMixin, viewsets.ReadOnlyModelViewSet):
    """Export jobs: create one, follow its progress, cancel it, download its archive."""

    model = ExportJob
    serializer_class = s.ExportJobSerializer
    filterset_class = ExportJobFilter

    def get_queryset(self):
        return super().get_queryset().prefetch_related("batches")

    @extend_schema(request=s.ExportCreateSerializer, responses={202: s.ExportJobSerializer, **ERRORS})
    def create(self, request):
        """Start an export; it runs on a worker. 202 with the job; poll it for progress."""
        form = s.ExportCreateSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        data = dict(form.validated_data)
        project = actions.check_project_for_export(request.user, data.pop("project"))
        job = actions.do_create_export(request.user, project, data.pop("format"), **data)
        return Response(self.get_serializer(job).data, status=status.HTTP_202_ACCEPTED)

    @extend_schema(
        responses={
            **{(code, media): OpenApiTypes.BINARY for code in (200, 206) for media in ARCHIVE_MEDIA_TYPES.values()},
            302: OpenApiResponse(description="S3_DOWNLOAD_REDIRECT: a presigned S3 URL serving the archive"),
            404: OpenApiResponse(ErrorSerializer),
            409: OpenApiResponse(ErrorSerializer),
            **RANGE_ERRORS,
        }
    )
    @action(detail=True, methods=["get"])
    def download(self, request, pk=None):
        """The archive of a finished export (supports HTTP Range); 409 while it is not done."""
        job = self.get_object()
        if not job.is_downloadable:
            raise actions.Conflict(f"export {job.pk} is {job.status}; only finished exports can be downloaded")
        media = ARCHIVE_MEDIA_TYPES[job.archive_format]
        presigned = presigned_download_url(job.file.storage, job.file.name, job.filename, media)
        if presigned:
            return HttpResponseRedirect(presigned)  # S3_DOWNLOAD_REDIRECT: the client reads (and resumes) from S3
        return file_download(request, job.file, job.size, job.filename, media, etag=job.sha256)


@extend_schema_view(retrieve=extend_schema(responses={200: s.EvaluationSerializer, **READ_ERRORS}))
class EvaluationViewSet(JobViewSetMixin, mixins.CreateModelMixin, viewsets.ReadOnlyModelViewSet):
    """Evaluations: upload predictions for a split, then read per-turn and aggregate scores."""

    model = Evaluation
    serializer_class = s.EvaluationSerializer
    filterset_class = EvaluationFilter

    def list(self, request, *args, **kwargs):
        actions.check_evaluation_split_filter(request.user, request.query_params.get("split"))
        return super().list(request, *args, **kwargs)

    @extend_schema(request=s.EvaluationCreateSerializer, responses={202: s.EvaluationSerializer, **ERRORS})
    def create(self, request):
        """Score predictions on a split of a project; runs on a worker. 202 with the evaluation; poll it."""
        form = s.EvaluationCreateSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        data = form.validated_data
        project = actions.check_project_for_export(request.user, data["project"])
        evaluation = actions.do_create_evaluation(
            request.user, project, data["format"], data["split"], data["predictions"]
        )
        return Response(self.get_serializer(evaluation).data, status=status.HTTP_202_ACCEPTED)


def split_statuses(request) -> list[str]:
    raw = request.query_params.get("statuses") or "validated"
    statuses = [status_name.strip() for status_name in raw.split(",") if status_name.strip()]
    for index, name in enumerate(statuses):
        actions.check_choice(f"statuses[{index}]", name, actions.STATUS_CHOICES)
    return statuses


class ProjectSplitsView(APIView):
    """``/api/projects/<name>/splits/``: the split configuration, per-split counts and the leakage report (WebLINX and
    Mind2Web schemes), for every member; project admins change the configuration with PUT/PATCH."""

    @extend_schema(
        operation_id="projects_splits_retrieve",
        parameters=[
            OpenApiParameter("statuses", str, description="Comma-separated demo statuses (default validated).")
        ],
        responses={200: OpenApiTypes.OBJECT, **error_responses(400, 404)},
    )
    def get(self, request, name):
        project = check_project_role(request.user, name, Role.values, "see the splits")
        return self.answer(request, project, SplitConfig.for_project(project))

    @extend_schema(
        operation_id="projects_splits_update",
        request=s.SplitConfigSerializer,
        responses={200: OpenApiTypes.OBJECT, **error_responses(400, 403, 404)},
    )
    def put(self, request, name):
        return self.change(request, name, partial=False)

    @extend_schema(
        operation_id="projects_splits_partial_update",
        request=s.SplitConfigSerializer,
        responses={200: OpenApiTypes.OBJECT, **error_responses(400, 403, 404)},
    )
    def patch(self, request, name):
        return self.change(request, name, partial=True)

    def change(self, request, name, partial: bool):
        project = check_project_role(request.user, name, Role.values, "see the splits")
        split_actions.check_split_config_changeable(request.user, project)
        form = s.SplitConfigSerializer(SplitConfig.for_project(project), data=request.data, partial=partial)
        form.is_valid(raise_exception=True)
        return self.answer(request, project, split_actions.do_update_split_config(project, form.validated_data))

    def answer(self, request, project, config):
        statuses = split_statuses(request)
        return Response(
            {
                "config": s.SplitConfigSerializer(config).data,
                "statuses": statuses,
                **split_actions.split_reports(project, statuses),
            }
        )
