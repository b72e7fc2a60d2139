"""Request and response shapes of the work API (batches, tasks, assignments), and so its OpenAPI schema."""

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from rest_framework import serializers

from annotation.actions import forms
from annotation.models import Assignment, AssignmentStatus, Batch, BatchKind, Task

MAX_INT = 2**31 - 1


class BatchSerializer(serializers.ModelSerializer):
    project = serializers.SlugRelatedField(slug_field="name", read_only=True)
    # null for batches the platform makes itself (a Mind2Web proposal or demonstration batch)
    created_by = serializers.SlugRelatedField(slug_field="username", read_only=True, allow_null=True)
    workers = serializers.SlugRelatedField(slug_field="username", many=True, read_only=True)
    worker_groups = serializers.SlugRelatedField(slug_field="name", many=True, read_only=True)
    tasks_total = serializers.IntegerField(read_only=True)
    tasks_done = serializers.IntegerField(read_only=True)

    class Meta:
        model = Batch
        fields = [
            "id",
            "project",
            "name",
            "kind",
            "description",
            "source_name",
            "template_fields",
            "has_submit_button",
            "uses_crowd_elements",
            "external_scripts",
            "import_warnings",
            "csv_filename",
            "csv_columns",
            "assignments_per_task",
            "allotted_seconds",
            "published",
            "active",
            "completed",
            "workers",
            "worker_groups",
            "tasks_total",
            "tasks_done",
            "created_by",
            "created_at",
        ]
        read_only_fields = fields


class BatchCreatedSerializer(BatchSerializer):
    warnings = serializers.ListField(child=serializers.CharField(), read_only=True)

    class Meta(BatchSerializer.Meta):
        fields = [*BatchSerializer.Meta.fields, "warnings"]
        read_only_fields = fields


def usernames_field():
    return serializers.ListField(
        child=serializers.CharField(max_length=150),
        required=False,
        help_text="Usernames allowed to work on it; none (and no group) = the project's annotators and admins.",
    )


def group_names_field():
    return serializers.ListField(
        child=serializers.CharField(max_length=150), required=False, help_text="Groups allowed to work on it."
    )


class BatchSettingsMixin(serializers.Serializer):
    description = serializers.CharField(required=False, allow_blank=True, help_text="Instructions for workers.")
    assignments_per_task = serializers.IntegerField(required=False, min_value=1, max_value=MAX_INT)
    allotted_seconds = serializers.IntegerField(
        required=False, min_value=1, max_value=MAX_INT, help_text="Time per assignment before it expires."
    )
    published = serializers.BooleanField(required=False)
    active = serializers.BooleanField(required=False)
    workers = usernames_field()
    worker_groups = group_names_field()

    def validate_workers(self, names):
        users = list(get_user_model().objects.filter(username__in=names))
        unknown = sorted(set(names) - {user.username for user in users})
        if unknown:
            raise serializers.ValidationError(f"no such user: {', '.join(unknown)}")
        return users

    def validate_worker_groups(self, names):
        groups = list(Group.objects.filter(name__in=names))
        unknown = sorted(set(names) - {group.name for group in groups})
        if unknown:
            raise serializers.ValidationError(f"no such group: {', '.join(unknown)}")
        return groups


class BatchCreateSerializer(BatchSettingsMixin):
    """A Turkle/MTurk-style upload (multipart): the template and the CSV of inputs, with the batch's settings."""

    project = serializers.SlugField(help_text="A project where you are a researcher or admin.")
    name = serializers.CharField(required=False, max_length=200, help_text="Default: the CSV's file name.")
    template = serializers.FileField(help_text="The HTML template (UTF-8) with ${column} placeholders.")
    csv = serializers.FileField(help_text="The CSV (UTF-8): a header, one row per task; Answer.* columns = gold.")
    # Given defaults, a boolean left out of form data is true (DRF would read a missing checkbox as false).
    published = serializers.BooleanField(
        default=True,
        help_text="Workers see the batch and get its tasks at once. Default: true (a program that uploads sets gold "
        "and qualifications afterwards should send false, then POST …/publish/; the web form always starts "
        "unpublished).",
    )
    active = serializers.BooleanField(default=True, help_text="The batch hands out work. Default: true.")

    def validate_name(self, name):
        return forms.check_batch_name(name)


class BatchUpdateSerializer(BatchSettingsMixin):
    """Settings that may change after upload (the template and tasks may not)."""

    name = serializers.CharField(required=False, max_length=200)

    def validate_name(self, name):
        return forms.check_batch_name(name)


class BatchExtendSerializer(serializers.Serializer):
    """More time: a new time per assignment (from now on) and/or more time for every active assignment."""

    allotted_seconds = serializers.IntegerField(
        required=False, min_value=1, max_value=MAX_INT, help_text="The new time per assignment handed out from now on."
    )
    active_extra_seconds = serializers.IntegerField(
        required=False,
        min_value=1,
        max_value=MAX_INT,
        help_text="Seconds added to the expiry of every active, unexpired assignment of the batch.",
    )

    def validate(self, data):
        if not data:
            raise serializers.ValidationError({"allotted_seconds": "give allotted_seconds and/or active_extra_seconds"})
        return data


class BatchExtendedSerializer(BatchSerializer):
    extended_assignments = serializers.IntegerField(
        read_only=True, help_text="How many active assignments got more time."
    )

    class Meta(BatchSerializer.Meta):
        fields = [*BatchSerializer.Meta.fields, "extended_assignments"]
        read_only_fields = fields


class BatchAddAssignmentsSerializer(serializers.Serializer):
    count = serializers.IntegerField(
        min_value=1, max_value=1000, help_text="How many more workers per task (raises assignments_per_task)."
    )


class BatchInstructionsSerializer(serializers.Serializer):
    description = serializers.CharField(
        allow_blank=True, max_length=100_000, trim_whitespace=True, help_text="The instructions shown above the task."
    )


class TaskSerializer(serializers.ModelSerializer):
    preview_url = serializers.SerializerMethodField(
        help_text="The task's preview page (submit disabled), authorised by a signed token in the URL that expires."
    )

    class Meta:
        model = Task
        fields = ["id", "index", "inputs", "gold", "taken", "submitted", "completed", "preview_url"]
        read_only_fields = fields

    def get_preview_url(self, task) -> str:
        return self.context["request"].build_absolute_uri(forms.preview_url(task))


class AssignmentSerializer(serializers.ModelSerializer):
    batch = serializers.IntegerField(source="task.batch_id", read_only=True)
    task_index = serializers.IntegerField(source="task.index", read_only=True)
    worker = serializers.SlugRelatedField(slug_field="username", read_only=True)
    answers = serializers.JSONField(read_only=True, help_text="{name: value}, or {name: [values]} in form order.")

    class Meta:
        model = Assignment
        fields = [
            "id",
            "batch",
            "task",
            "task_index",
            "worker",
            "status",
            "answers",
            "accepted_at",
            "expires_at",
            "submitted_at",
            "ended_at",
            "work_seconds",
            "review",
            "feedback",
            "reviewed_at",
            "ended_reason",
        ]
        read_only_fields = fields
        extra_kwargs = {
            "ended_reason": {"help_text": "Why the platform took the assignment back (your access ended, a block)."}
        }


class AcceptSerializer(serializers.Serializer):
    task = serializers.IntegerField(
        required=False,
        min_value=1,
        max_value=MAX_INT,
        help_text="The task you previewed (its id). In a batch that serves gold tasks the queue chooses: you get "
        "its next task instead.",
    )


class SubmitSerializer(serializers.Serializer):
    answers = serializers.JSONField(help_text="{name: text} or {name: [texts]}, as the task's form sends them.")


class SkippedSerializer(serializers.Serializer):
    skipped = AssignmentSerializer(help_text="The assignment you skipped.")
    next = AssignmentSerializer(allow_null=True, help_text="The batch's next task for you, or null when none is left.")


class WorkerStatsSerializer(serializers.Serializer):
    username = serializers.CharField()
    active = serializers.IntegerField()
    submitted = serializers.IntegerField()
    returned = serializers.IntegerField()
    skipped = serializers.IntegerField()
    expired = serializers.IntegerField()
    work_seconds_total = serializers.FloatField()
    work_seconds_median = serializers.FloatField(allow_null=True)


class AssignmentCountsSerializer(serializers.Serializer):
    active = serializers.IntegerField()
    submitted = serializers.IntegerField()
    returned = serializers.IntegerField()
    skipped = serializers.IntegerField()
    expired = serializers.IntegerField()


class BatchStatsSerializer(serializers.Serializer):
    batch = serializers.IntegerField()
    tasks_total = serializers.IntegerField()
    tasks_done = serializers.IntegerField()
    assignments_per_task = serializers.IntegerField()
    assignments = AssignmentCountsSerializer()
    completed = serializers.BooleanField()
    work_seconds_total = serializers.FloatField()
    work_seconds_median = serializers.FloatField(allow_null=True)
    workers = WorkerStatsSerializer(many=True)


KINDS = BatchKind.values
ASSIGNMENT_STATUSES = AssignmentStatus.values
