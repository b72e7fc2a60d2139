"""The quality API: agreement and aggregation of a form batch (``/api/agreement/<batch id>/``, JSON; one table as
CSV at ``/api/agreement/<batch id>/<fields|workers|tasks>/``). Thin: ``annotation.actions.quality.agreement``."""

import json

from django.http import HttpResponse
from django.utils.http import content_disposition_header
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import renderers, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response
from rest_framework.reverse import reverse

from annotation.actions.quality import agreement
from annotation.models import Batch

from ..serializers import ErrorSerializer, error_responses

ERRORS = error_responses(403, 404)


class CSVRenderer(renderers.BaseRenderer):
    """``text/csv`` for a table download; an error goes out as the API's JSON (``finalize_response``)."""

    media_type, format, charset = "text/csv", "csv", "utf-8"

    def render(self, data, accepted_media_type=None, renderer_context=None):
        return data.encode() if isinstance(data, str) else json.dumps(data).encode()


class AgreementViewSet(viewsets.GenericViewSet):
    """Agreement among the workers of a form batch and their answers aggregated per task (reviewers, researchers
    and admins of its project; annotators 403, other projects 404). Undefined figures are ``null``."""

    lookup_value_regex = r"[0-9]+"

    def finalize_response(self, request, response, *args, **kwargs):
        if response.status_code >= 400 and isinstance(getattr(request, "accepted_renderer", None), CSVRenderer):
            request.accepted_renderer, request.accepted_media_type = renderers.JSONRenderer(), "application/json"
        return super().finalize_response(request, response, *args, **kwargs)

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):
            return Batch.objects.none()
        return agreement.readable_batches(self.request.user)

    @extend_schema(operation_id="agreement_list", responses={200: OpenApiTypes.OBJECT})
    def list(self, request):
        """The form batches whose agreement you may read, each with the address of its figures."""
        page = self.paginate_queryset(self.get_queryset())
        rows = [
            {
                "batch": batch.pk,
                "name": batch.name,
                "project": batch.project.name,
                "url": reverse("agreement-detail", args=[batch.pk], request=request),
            }
            for batch in page
        ]
        return self.get_paginated_response(rows)

    @extend_schema(operation_id="agreement_retrieve", responses={200: OpenApiTypes.OBJECT, **ERRORS})
    def retrieve(self, request, pk=None):
        """Per field (answers, agreement with the majority, Krippendorff's α), per worker (agreement with the
        majority, gold accuracy) and per task (majority-vote and Dawid–Skene answers, agreement)."""
        batch = agreement.check_batch_agreement(request.user, pk)
        return Response(agreement.batch_agreement(batch))

    @extend_schema(
        operation_id="agreement_table",
        responses={(200, "text/csv"): OpenApiTypes.STR, 403: OpenApiResponse(ErrorSerializer), 404: None},
        description="One table of the batch's agreement as CSV (undefined figures are empty cells).",
    )
    @action(
        detail=True,
        methods=["get"],
        url_path="(?P<table>fields|workers|tasks)",
        renderer_classes=[CSVRenderer, renderers.JSONRenderer],
    )
    def table(self, request, pk=None, table="fields"):
        batch = agreement.check_batch_agreement(request.user, pk)
        response = HttpResponse(agreement.table_csv(agreement.batch_agreement(batch), table), content_type="text/csv")
        response["Content-Disposition"] = content_disposition_header(True, agreement.download_name(batch, table, "csv"))
        return response
