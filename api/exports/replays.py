"""Offline replays (docs/mind2web.md#replay): ``POST /api/projects/<name>/replays/`` ``{"task": annotation_id}``
queues one (202); ``GET …/replays/<annotation_id>/`` is its status and, once done, its result."""

from drf_spectacular.utils import extend_schema
from rest_framework import serializers as s
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.actions.exports import replays

from ..serializers import error_responses


class ReplayRequestSerializer(s.Serializer):
    task = s.CharField(help_text="The task's Mind2Web annotation_id.")


class ReplayStepSerializer(s.Serializer):
    action_uid = s.CharField()
    ok = s.BooleanField()
    why = s.CharField(required=False)


class ReplayStatusSerializer(s.Serializer):
    task = s.CharField()
    status = s.ChoiceField(["none", "queued", "running", "done", "failed"])
    at = s.CharField(required=False, help_text="When it was queued (running) or ended (done, failed).")
    started_at = s.CharField(required=False, help_text="Running: when the worker started it.")
    lost = s.BooleanField(
        required=False, help_text="Queued or running past its bound (docs/mind2web.md#replay): may be requested again."
    )
    error = s.CharField(required=False)
    steps = s.IntegerField(required=False)
    replayed = s.IntegerField(required=False)
    first_failure = s.IntegerField(required=False, allow_null=True, help_text="1-based; null when every step replayed.")
    per_step = ReplayStepSerializer(many=True, required=False)


class ReplaysView(APIView):
    @extend_schema(
        operation_id="projects_replays_create",
        request=ReplayRequestSerializer,
        responses={202: ReplayStatusSerializer, **error_responses(400, 403, 404, 409)},
    )
    def post(self, request, name):
        return Response(replays.do_request_replay(request.user, name, request.data), status=202)


class ReplayView(APIView):
    @extend_schema(
        operation_id="projects_replays_retrieve",
        responses={200: ReplayStatusSerializer, **error_responses(403, 404)},
    )
    def get(self, request, name, task):
        return Response(replays.replay_status(request.user, name, task))
