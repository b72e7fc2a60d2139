"""Import jobs: ``POST /api/projects/<name>/imports/`` uploads a release archive (researcher or admin), the worker
imports it, and ``/api/imports/<id>/`` shows its progress, summary and report (docs/recuration.md)."""

from django.http import Http404
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers, status, viewsets
from rest_framework.parsers import MultiPartParser
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.actions.exports import imports, jobs
from annotation.actions.exports.releases import check_project_for_import
from annotation.models import ImportJob, Project

from ..serializers import error_responses


class ImportJobSerializer(serializers.ModelSerializer):
    project = serializers.SlugRelatedField(slug_field="name", read_only=True)
    owner = serializers.SlugRelatedField(slug_field="username", read_only=True)
    format = serializers.CharField(read_only=True, help_text="The release's format: weblinx or mind2web.")

    class Meta:
        model = ImportJob
        fields = [
            "id",
            "project",
            "owner",
            "format",
            "archive_name",
            "size",
            "sha256",
            "status",
            "progress",
            "error",
            "report",
            "file_freed_at",
            "created_at",
            "started_at",
            "finished_at",
        ]
        read_only_fields = fields


UPLOAD = inline_serializer(
    "ImportUpload",
    {
        "file": serializers.FileField(
            help_text="The release, .zip or .tar.gz; for mind2web also one split file (train.json, test_task.json...)."
        ),
        "format": serializers.CharField(required=False, help_text="weblinx (the default) or mind2web."),
    },
)


class ProjectImportsView(APIView):
    """``/api/projects/<name>/imports/``: upload a WebLINX or Mind2Web release to import (researcher or admin; 403
    for the project's other roles, 404 outside it)."""

    parser_classes = [MultiPartParser]

    @extend_schema(
        operation_id="projects_imports_create",
        request={"multipart/form-data": UPLOAD},
        responses={202: ImportJobSerializer, **error_responses(400, 403, 404, 409, 413)},
    )
    def post(self, request, name):
        project = check_project_for_import(request.user, name)
        upload, release_format = request.FILES.get("file"), imports.check_import_format(request.data.get("format"))
        imports.check_import_upload(upload, release_format)
        job = imports.do_create_import(request.user, project, upload, release_format)
        return Response(ImportJobSerializer(job).data, status=status.HTTP_202_ACCEPTED)


@extend_schema(responses={200: ImportJobSerializer, **error_responses(403, 404)})
class ImportJobViewSet(viewsets.ReadOnlyModelViewSet):
    """Import jobs of the projects where you may import: status, progress, error and report."""

    serializer_class = ImportJobSerializer

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):
            return ImportJob.objects.none()
        jobs.reap_stale_jobs(ImportJob)
        projects = Project.objects.for_user(self.request.user, jobs.EXPORT_ROLES)
        return ImportJob.objects.filter(project__in=projects).select_related("project", "owner")

    def get_object(self):
        try:
            return super().get_object()
        except Http404:
            imports.check_job_not_other_role(self.request.user, self.kwargs.get("pk"))
            raise
