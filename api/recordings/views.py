"""The recordings API: each view checks with ``annotation.actions.recordings`` (through ``annotation.actions``) and
calls one action."""

import io

from django.conf import settings
from django.db.models import Count
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation import actions
from annotation.lib import schema
from annotation.models import Demonstration

from ..downloads import RANGE_ERRORS, file_download
from ..serializers import ErrorSerializer, error_responses
from . import serializers as s

ERRORS = error_responses(400, 403, 404, 409, 413)


ERROR_415 = OpenApiResponse(ErrorSerializer)


# The server could not write the upload (disk full, an I/O error): nothing stored, retry after ``Retry-After``.
ERROR_STORAGE = OpenApiResponse(ErrorSerializer, description="storage_unavailable: nothing was stored; retry later")


CONTENT_ENCODING = OpenApiParameter(
    "Content-Encoding",
    str,
    OpenApiParameter.HEADER,
    enum=["gzip", "identity"],
    description="gzip: the body is gzipped.",
)


class RecordingViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Recordings (demonstrations) of your projects; the recorder starts, fills and finishes them here."""

    serializer_class = s.DemonstrationSerializer
    lookup_field = "name"
    filterset_fields = {"project__name": ["exact"], "status": ["exact"], "navigator__username": ["exact"]}

    def get_queryset(self):
        return (
            Demonstration.objects.visible_to(self.request.user)
            .select_related("project", "navigator", "instructor")
            .annotate(turn_count=Count("turns"))
            .order_by("-created_at")  # Meta.ordering is ignored once Count() adds a GROUP BY
        )

    @extend_schema(
        request=s.RecordingStartSerializer,
        responses={201: s.DemonstrationSerializer, 200: s.DemonstrationSerializer, **ERRORS},
    )
    def create(self, request):
        """Start a demonstration. Re-sending the same ``client_id`` returns the same one (200)."""
        data = s.RecordingStartSerializer(data=request.data, context={"request": request})
        data.is_valid(raise_exception=True)
        fields = dict(data.validated_data)
        project = actions.check_project_for_recording(request.user, fields.pop("project"))
        demo, created = actions.do_start_recording(request.user, project, **fields)
        body = self.get_serializer(self.get_queryset().get(pk=demo.pk)).data
        return Response(body, status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)

    @extend_schema(methods=["GET"], request=None, responses={200: s.TurnSerializer(many=True), **ERRORS})
    @extend_schema(
        methods=["POST"],
        request=s.TurnBatchSerializer,
        responses={201: s.IngestResultSerializer, 200: s.IngestResultSerializer, **ERRORS},
    )
    @action(detail=True, methods=["get", "post"], pagination_class=None)  # every turn, in one list
    def turns(self, request, name=None):
        """GET: the stored turns in timeline order. POST: add a batch of turns, atomically; turns already stored
        (same ``client_id``) are not stored again."""
        if request.method == "GET":
            demo = actions.check_demo_readable(request.user, name)
            return Response(s.TurnSerializer(demo.turns.order_by("timestamp", "seq"), many=True).data)
        demo = actions.check_demo_writable(request.user, name)
        body = request.data if isinstance(request.data, dict) else {}
        result = actions.do_ingest_turns(demo, body.get("turns"))
        return Response(result.as_dict(), status=status.HTTP_201_CREATED if result.created else status.HTTP_200_OK)

    @extend_schema(
        request={actions.BUNDLE_MEDIA_TYPE: OpenApiTypes.BINARY},
        parameters=[CONTENT_ENCODING],
        responses={
            201: s.BundleResultSerializer,
            200: s.BundleResultSerializer,
            415: ERROR_415,
            503: ERROR_STORAGE,
            **ERRORS,
        },
    )
    @action(detail=True, methods=["post"], parser_classes=[])  # the body is framed bytes, read by the action
    def bundle(self, request, name=None):
        """A bundle: the blobs a run of turns uses and the turns, in one request (docs/ingest.md): a JSON manifest line
        ``{"turns", "blobs": [{"sha256", "media_type", "size"}]}``, then the blobs' bytes in that order; gzip with
        ``Content-Encoding: gzip``. Checked whole and stored atomically; a retry stores nothing twice."""
        demo = actions.check_demo_for_bundle(request.user, name)
        body = (request.stream or io.BytesIO(b"")).read(settings.INGEST_MAX_UPLOAD_BYTES + 1)
        if len(body) > settings.INGEST_MAX_UPLOAD_BYTES:
            raise actions.TooLarge("request body exceeds INGEST_MAX_UPLOAD_BYTES")
        result = actions.do_ingest_bundle(
            demo, body, request.content_type, request.headers.get("Content-Encoding"), request.user
        )
        return Response(result.as_dict(), status=status.HTTP_201_CREATED if result.created else status.HTTP_200_OK)

    @extend_schema(exclude=True)
    @action(detail=True, methods=["post"], parser_classes=[], url_path="batch")
    def batch(self, request, name=None):
        """``…/batch/``: the old path of ``…/bundle/``, kept for one release (docs/api.md)."""
        return self.bundle(request, name)

    @extend_schema(methods=["GET"], request=None, responses={200: s.VideoChunkSerializer(many=True), **ERRORS})
    @extend_schema(
        methods=["POST"],
        request=s.VideoChunkSerializer,
        responses={201: s.VideoChunkSerializer, 200: s.VideoChunkSerializer, **ERRORS},
    )
    @action(detail=True, methods=["get", "post"], pagination_class=None)  # every chunk, in one list
    def video(self, request, name=None):
        """GET: the tab video's chunks in order. POST ``{index, blob, started_at}``: attach an uploaded
        video/webm blob as chunk ``index`` (re-sending it is harmless)."""
        if request.method == "GET":
            demo = actions.check_demo_readable(request.user, name)
            return Response(s.VideoChunkSerializer(demo.video_chunks.all(), many=True).data)
        demo = actions.check_demo_writable(request.user, name)
        body = request.data if isinstance(request.data, dict) else {}
        chunk, created = actions.do_add_video_chunk(demo, body.get("index"), body.get("blob"), body.get("started_at"))
        return Response(s.VideoChunkSerializer(chunk).data, status=status.HTTP_201_CREATED if created else 200)

    @extend_schema(request=s.FinishSerializer, responses={200: s.DemonstrationSerializer, **ERRORS})
    @action(detail=True, methods=["post"])
    def finish(self, request, name=None):
        """Mark the recording as recorded. Finishing twice is harmless."""
        demo = actions.check_demo_writable(request.user, name)
        data = s.FinishSerializer(data=request.data if isinstance(request.data, dict) else {})
        data.is_valid(raise_exception=True)
        fields = data.validated_data
        actions.do_finish_recording(demo, fields.get("recording_end"), fields.get("task_description"))
        return Response(self.get_serializer(self.get_queryset().get(pk=demo.pk)).data)


BLOB_BODY = dict.fromkeys(actions.BLOB_MEDIA_TYPES, OpenApiTypes.BINARY)


PROJECT_PARAMETER = OpenApiParameter(
    "project", str, required=True, description="The project the blob is for: answers and uploads are per project."
)


class BlobView(APIView):
    """Content-addressed files. ``HEAD`` tells whether a project has a blob; ``PUT`` uploads it to a project;
    ``GET`` reads it. Stored once on disk, but answered per project: a project never learns what another holds."""

    parser_classes = []  # the body is streamed and hashed by the action, never parsed

    @extend_schema(
        responses={
            **{(code, media): OpenApiTypes.BINARY for code in (200, 206) for media in actions.BLOB_MEDIA_TYPES},
            **RANGE_ERRORS,
        },
        operation_id="blobs_retrieve",
    )
    def get(self, request, sha256):
        """The blob's bytes (HTTP Range supported), to members of a project whose demonstration uses it. Always an
        attachment under a sandboxing CSP: recorded pages are hostile content and never render in our origin."""
        blob = actions.check_blob_readable(request.user, sha256)
        response = file_download(request, blob.file, blob.size, sha256, blob.media_type, sha256)
        response["Content-Security-Policy"] = "sandbox; default-src 'none'"
        response["X-Content-Type-Options"] = "nosniff"
        return response

    @extend_schema(parameters=[PROJECT_PARAMETER], responses={200: None, 404: None}, operation_id="blobs_check")
    def head(self, request, sha256):
        """200 with ``X-Blob-Size`` and ``X-Blob-Media-Type`` when the project has the blob, 404 when not (even if
        another project has the same bytes), 400 for a malformed sha256 or no project."""
        project = actions.check_project_for_blobs(request.user, request.query_params.get("project"))
        if not schema.is_sha256(sha256):
            return Response(status=status.HTTP_400_BAD_REQUEST)
        blob = actions.check_blob_stored(sha256, project)
        if blob is None:
            return Response(status=status.HTTP_404_NOT_FOUND)
        headers = {"X-Blob-Size": str(blob.size), "X-Blob-Media-Type": blob.media_type, "ETag": f'"{sha256}"'}
        return Response(status=status.HTTP_200_OK, headers=headers)

    @extend_schema(
        parameters=[PROJECT_PARAMETER],
        request=BLOB_BODY,
        responses={201: None, 200: None, 415: ERROR_415, 503: ERROR_STORAGE, **ERRORS},
    )
    def put(self, request, sha256):
        """Upload a blob to a project. The server checks the sha256 and, for images, that they decode. 201 new to
        the project, 200 when the project has it already."""
        project = actions.check_project_for_blobs(request.user, request.query_params.get("project"))
        length = request.META.get("CONTENT_LENGTH")
        stream = request.stream or io.BytesIO(b"")
        blob, created = actions.do_store_blob(
            sha256, request.content_type, stream, int(length) if length else None, project, request.user
        )
        body = {"sha256": blob.sha256, "size": blob.size, "media_type": blob.media_type}
        return Response(body, status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)


class MissingBlobsView(APIView):
    """One round trip instead of a ``HEAD`` per blob: which of these blobs must still be uploaded to the project?"""

    @extend_schema(request=s.MissingBlobsSerializer, responses={200: s.MissingBlobsResultSerializer, **ERRORS})
    def post(self, request):
        """``{"project", "sha256": [...]}`` → ``{"missing": [...]}``, the ones the project does not have yet (at
        most 1,000 per request)."""
        body = request.data if isinstance(request.data, dict) else {}
        project = actions.check_project_for_blobs(request.user, body.get("project"))
        return Response({"missing": actions.check_missing_blobs(body.get("sha256"), project)})
