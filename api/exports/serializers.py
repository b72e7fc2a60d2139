"""Request and response shapes of the exports API (and so its OpenAPI schema): split configuration, demonstrations
with their split, export and evaluation jobs."""

from rest_framework import serializers

from annotation.actions.exports.jobs import MAX_SELECTED
from annotation.actions.exports.splits import split_config_errors
from annotation.models import TASK_METADATA, Demonstration, Evaluation, ExportJob, SplitConfig


class SplitConfigSerializer(serializers.ModelSerializer):
    class Meta:
        model = SplitConfig
        fields = [
            "seed",
            "valid_fraction",
            "test_iid_fraction",
            "held_out_websites",
            "held_out_subcategories",
            "held_out_regions",
            "held_out_domains",
            "test_task_fraction",
            "updated_at",
        ]
        read_only_fields = ["updated_at"]

    def validate(self, data):
        errors = split_config_errors(data, self.instance)
        if errors:
            raise serializers.ValidationError(errors)
        return data


class DemonstrationSummarySerializer(serializers.ModelSerializer):
    project = serializers.SlugRelatedField(slug_field="name", read_only=True)
    navigator = serializers.SlugRelatedField(slug_field="username", read_only=True)
    split = serializers.CharField(read_only=True, help_text="Split under the project's configuration and `scheme`.")
    turn_count = serializers.IntegerField(read_only=True)
    instructor = serializers.SlugRelatedField(slug_field="username", read_only=True, allow_null=True)
    source_id = serializers.CharField(
        read_only=True, help_text="An imported demo's id in its release (docs/recuration.md); blank when recorded here."
    )

    class Meta:
        model = Demonstration
        fields = [
            "name",
            "project",
            "source_id",
            "status",
            "mode",
            "split",
            *TASK_METADATA,
            "navigator",
            "instructor",
            "turn_count",
            "recording_start",
            "recording_end",
        ]
        read_only_fields = fields


class JobFieldsMixin(serializers.Serializer):
    id = serializers.IntegerField(read_only=True)
    project = serializers.SlugRelatedField(slug_field="name", read_only=True)
    owner = serializers.SlugRelatedField(slug_field="username", read_only=True)


class ExportJobSerializer(JobFieldsMixin, serializers.ModelSerializer):
    download_url = serializers.SerializerMethodField()
    batches = serializers.SerializerMethodField(
        help_text="turkingbench: the form batches exported, {id, name} (empty for the other formats)."
    )

    def get_batches(self, job) -> list[dict]:
        return [{"id": batch.pk, "name": batch.name} for batch in sorted(job.batches.all(), key=lambda b: b.name)]

    class Meta:
        model = ExportJob
        fields = [
            "id",
            "project",
            "format",
            "splits",
            "statuses",
            "demos",
            "archive_format",
            "batches",
            "review_states",
            "include_gold",
            "exact_cells",
            "status",
            "progress",
            "counts",
            "error",
            "sha256",
            "size",
            "owner",
            "created_at",
            "started_at",
            "finished_at",
            "download_url",
        ]
        read_only_fields = fields

    def get_download_url(self, job) -> str | None:
        if not job.is_downloadable:
            return None
        return self.context["request"].build_absolute_uri(f"/api/exports/{job.pk}/download/")


class ExportCreateSerializer(serializers.Serializer):
    project = serializers.SlugField()
    format = serializers.CharField(help_text="weblinx, mind2web or turkingbench (the project's form batches).")
    splits = serializers.ListField(
        child=serializers.CharField(),
        required=False,
        default=list,
        help_text="Splits to include; empty or absent = all.",
    )
    statuses = serializers.ListField(
        child=serializers.CharField(),
        required=False,
        default=None,
        help_text="weblinx, mind2web: demo statuses to include (default validated). Not for turkingbench (400).",
    )
    demos = serializers.ListField(
        child=serializers.CharField(max_length=200),
        required=False,
        default=list,
        max_length=MAX_SELECTED,
        help_text="Only these demonstrations (names); each must match statuses and splits. Empty or absent = all.",
    )
    archive_format = serializers.CharField(required=False, default="tar.gz", help_text="tar.gz or zip.")
    batches = serializers.ListField(
        child=serializers.IntegerField(),
        required=False,
        default=None,
        max_length=MAX_SELECTED,
        help_text="turkingbench: ids of the project's form batches to export; empty or absent = all of them.",
    )
    review_states = serializers.ListField(
        child=serializers.CharField(),
        required=False,
        default=None,
        help_text="turkingbench: review states of the submitted work written as answer rows: approved, pending "
        "(submitted, not yet reviewed), rejected. Absent = approved and pending.",
    )
    include_gold = serializers.BooleanField(
        required=False,
        default=None,
        allow_null=True,
        help_text="turkingbench: also write each batch's gold rows (the known answers imported with it), before the "
        "workers' rows. Absent = true.",
    )
    exact_cells = serializers.BooleanField(
        required=False,
        default=None,
        allow_null=True,
        help_text="turkingbench: write batch.csv cells verbatim, as TurkingBench's tools read them; absent = false: "
        "a cell beginning with = + - @ is written with a leading ' (safe to open in a spreadsheet).",
    )


class EvaluationSerializer(JobFieldsMixin, serializers.ModelSerializer):
    class Meta:
        model = Evaluation
        fields = [
            "id",
            "project",
            "format",
            "split",
            "status",
            "progress",
            "error",
            "results",
            "data_version",
            "owner",
            "created_at",
            "started_at",
            "finished_at",
        ]
        read_only_fields = fields


class EvaluationCreateSerializer(serializers.Serializer):
    project = serializers.SlugField()
    format = serializers.CharField(help_text="weblinx, mind2web or turkingbench (the project's form tasks).")
    split = serializers.CharField(
        required=False,
        default="",
        allow_blank=True,
        help_text="Required for weblinx and mind2web; optional for "
        "turkingbench (test_easy, test_hard, ... restricts the tasks predictions may name).",
    )
    predictions = serializers.JSONField(
        help_text='WebLINX: [{"demo_name", "turn_index", "output_predicted"}]; Mind2Web: [{"annotation_id", '
        '"action_index", "backend_node_id", "operation": {"op", "value"}}]; TurkingBench: [{"task", "instance", '
        '"fields": {name: value or [values]}}] (docs/agents.md).'
    )
