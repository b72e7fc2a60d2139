"""Request and response shapes of the recordings API (and so its OpenAPI schema).

Turn batches are validated by ``annotation.lib.schema`` (the WebLINX schema, shared with the synthetic corpus);
the turn serializers here describe that shape for the OpenAPI documentation.
"""

from django.contrib.auth import get_user_model
from rest_framework import serializers

from annotation.lib import schema
from annotation.models import TASK_METADATA, Assignment, DemoMode, Demonstration, Turn, VideoChunk


class RecorderClientSerializer(serializers.Serializer):
    """What the recorder says about itself when it starts any recording (a demonstration task's too)."""

    client_id = serializers.CharField(
        max_length=64, help_text="Recorder-chosen unique id (e.g. a UUID); re-sending it returns the same recording."
    )
    recording_start = serializers.DateTimeField(required=False, help_text="Defaults to the time of the request.")
    timezone_offset_minutes = serializers.IntegerField(required=False, default=0, min_value=-840, max_value=840)
    user_agent = serializers.CharField(max_length=500, allow_blank=True, required=False, default="")
    recorder_version = serializers.CharField(max_length=32, allow_blank=True, required=False, default="")


class RecordingStartSerializer(RecorderClientSerializer):
    """What the recorder sends to start a demonstration."""

    project = serializers.SlugField(help_text="Name of a project in which you are an annotator or admin.")
    mode = serializers.ChoiceField(choices=DemoMode.choices, default=DemoMode.CHAT)
    task_description = serializers.CharField(allow_blank=True, required=False, default="")
    websites = serializers.ListField(child=serializers.CharField(max_length=253), required=False, default=list)
    category = serializers.CharField(max_length=100, allow_blank=True, required=False, default="")
    subcategory = serializers.CharField(max_length=100, allow_blank=True, required=False, default="")
    region = serializers.CharField(max_length=100, allow_blank=True, required=False, default="")
    instructor_sees_screen = serializers.BooleanField(required=False, default=True)
    instructor = serializers.SlugRelatedField(
        slug_field="username",
        queryset=get_user_model().objects.all(),
        required=False,
        allow_null=True,
        help_text="Username of the instructor (a member of the project).",
    )
    assignment = serializers.IntegerField(
        required=False,
        allow_null=True,
        min_value=1,
        max_value=2**63 - 1,
        help_text="A form-task assignment of yours in the project, when you record yourself doing it.",
    )

    def validate(self, data):
        instructor = data.get("instructor")
        if instructor is not None and not instructor.memberships.filter(project__name=data["project"]).exists():
            raise serializers.ValidationError({"instructor": f"{instructor.username} is not a member of the project"})
        if data.get("assignment") is not None:
            data["assignment"] = self.own_assignment(data["assignment"], data["project"])
        return data

    def own_assignment(self, pk, project_name):
        user = self.context["request"].user
        found = Assignment.objects.filter(pk=pk, worker=user, task__batch__project__name=project_name).first()
        if found is None:
            raise serializers.ValidationError({"assignment": f"no assignment {pk} of yours in {project_name!r}"})
        return found


class DemonstrationSerializer(serializers.ModelSerializer):
    project = serializers.SlugRelatedField(slug_field="name", read_only=True)
    navigator = serializers.SlugRelatedField(slug_field="username", read_only=True)
    instructor = serializers.SlugRelatedField(slug_field="username", read_only=True, allow_null=True)
    turn_count = serializers.IntegerField(read_only=True)
    record_traffic = serializers.BooleanField(
        source="project.record_traffic",
        read_only=True,
        help_text="The project keeps WebLINX recordings' traffic: the recorder sends a HAR with each action turn.",
    )

    class Meta:
        model = Demonstration
        fields = [
            "name",
            "project",
            "client_id",
            "status",
            "mode",
            "navigator",
            "instructor",
            *TASK_METADATA,
            "recording_start",
            "recording_end",
            "timezone_offset_minutes",
            "user_agent",
            "recorder_version",
            "assignment",
            "turn_count",
            "record_traffic",
            "created_at",
        ]
        read_only_fields = fields


class TurnInSerializer(serializers.Serializer):
    """One turn as the recorder submits it (documentation of the shape validated by ``annotation.lib.schema``)."""

    client_id = serializers.CharField(max_length=64, help_text="Unique per demonstration; makes retries safe.")
    type = serializers.ChoiceField(choices=schema.TURN_TYPES)
    timestamp = serializers.FloatField(min_value=0, help_text="Seconds since the recording started.")
    speaker = serializers.ChoiceField(choices=schema.SPEAKERS, required=False, help_text="Chat turns.")
    utterance = serializers.CharField(required=False, help_text="Chat turns.")
    intent = serializers.ChoiceField(choices=schema.INTENTS, required=False, help_text="Browser turns.")
    arguments = serializers.JSONField(
        required=False, help_text="Browser turns: WebLINX arguments (metadata, properties, element, text, ...)."
    )
    screenshot = serializers.CharField(required=False, help_text="sha256 of an uploaded image blob.")
    page = serializers.CharField(required=False, help_text="sha256 of an uploaded text/html blob.")
    bboxes = serializers.CharField(required=False, help_text="sha256 of an uploaded application/json blob.")
    label = serializers.CharField(
        required=False, max_length=schema.LABEL_MAX, help_text="Browser turns: the action's name shown in review."
    )


class TurnBatchSerializer(serializers.Serializer):
    turns = TurnInSerializer(many=True)


class TurnSerializer(serializers.ModelSerializer):
    """A stored turn of the raw capture, with its blobs by sha256."""

    speaker = serializers.ChoiceField(
        choices=schema.SPEAKERS, allow_blank=True, help_text="Chat turns; empty for browser turns."
    )
    screenshot = serializers.CharField(source="screenshot_id", allow_null=True)
    page = serializers.CharField(source="page_id", allow_null=True)
    bboxes = serializers.CharField(source="bboxes_id", allow_null=True)
    har = serializers.CharField(source="har_id", allow_null=True, help_text="Step mode: HAR 1.2 of the traffic.")
    dom_snapshot = serializers.CharField(
        source="dom_snapshot_id", allow_null=True, help_text="Step mode: DOM snapshot before the action."
    )

    class Meta:
        model = Turn
        fields = [
            "seq",
            "client_id",
            "type",
            "timestamp",
            "speaker",
            "utterance",
            "intent",
            "arguments",
            "url",
            "tab_id",
            "viewport_width",
            "viewport_height",
            "screenshot",
            "page",
            "bboxes",
            "har",
            "dom_snapshot",
            "frames",
        ]
        read_only_fields = fields


class VideoChunkSerializer(serializers.ModelSerializer):
    blob = serializers.CharField(source="blob_id", help_text="sha256 of an uploaded video/webm blob.")

    class Meta:
        model = VideoChunk
        fields = ["index", "blob", "started_at"]


class TurnRefSerializer(serializers.Serializer):
    client_id = serializers.CharField()
    seq = serializers.IntegerField()


class IngestResultSerializer(serializers.Serializer):
    created = serializers.IntegerField(help_text="Turns stored by this request.")
    duplicates = serializers.IntegerField(help_text="Turns that were already stored (a retried batch).")
    turns = TurnRefSerializer(many=True)


class BundleResultSerializer(IngestResultSerializer):
    blobs_created = serializers.IntegerField(help_text="Blobs of the bundle that were new to the project.")


class FinishSerializer(serializers.Serializer):
    recording_end = serializers.DateTimeField(required=False, help_text="Defaults to the time of the request.")
    task_description = serializers.CharField(
        required=False,
        max_length=2000,
        help_text="The task as the annotator confirmed or edited it at the end (Mind2Web step mode); "
        "omitted = unchanged. Ignored when the recording was already finished.",
    )


class MissingBlobsSerializer(serializers.Serializer):
    project = serializers.CharField(help_text="The project the blobs are for.")
    sha256 = serializers.ListField(child=serializers.CharField(), max_length=1000)


class MissingBlobsResultSerializer(serializers.Serializer):
    missing = serializers.ListField(child=serializers.CharField(), help_text="Blobs to upload with PUT.")
