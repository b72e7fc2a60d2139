"""Serializers of agent runs on form tasks (``/api/agent-runs/``)."""

from rest_framework import serializers

from annotation.actions.agents import MAX_INSTANCES_PER_TASK, MAX_SEED
from annotation.models import AgentFieldResult, AgentRun, ModelEndpoint

from ..exports.serializers import JobFieldsMixin


class AgentRunSerializer(JobFieldsMixin, serializers.ModelSerializer):
    instances = serializers.IntegerField(
        source="instances_per_task", allow_null=True, help_text="Instances per task (null: all)."
    )
    results_page = serializers.SerializerMethodField(help_text="The run's results in the web app.")

    class Meta:
        model = AgentRun
        fields = [
            "id",
            "project",
            "split",
            "solver",
            "instances",
            "seed",
            "metric",
            "status",
            "progress",
            "error",
            "sampled",
            "results",
            "owner",
            "created_at",
            "started_at",
            "finished_at",
            "results_page",
        ]
        read_only_fields = fields

    def get_results_page(self, run) -> str:
        return self.context["request"].build_absolute_uri(f"/agents/runs/{run.pk}/")


class AgentRunCreateSerializer(serializers.Serializer):
    project = serializers.SlugField(help_text="A project where you are a researcher or admin.")
    split = serializers.CharField(
        default="test_easy", help_text="test_easy, test_hard, subjective_test, train, all, or a stored split list."
    )
    solver = serializers.CharField(
        help_text="oracle, do-nothing, or python:module:Class under the platform's AGENT_SOLVER_MODULES."
    )
    instances = serializers.IntegerField(
        required=False,
        allow_null=True,
        default=None,
        min_value=1,
        max_value=MAX_INSTANCES_PER_TASK,
        help_text="Instances per task (default: all).",
    )
    seed = serializers.IntegerField(required=False, default=0, min_value=0, max_value=MAX_SEED)
    metric = serializers.ChoiceField(choices=["official", "paper"], required=False, default="official")


class AgentFieldResultSerializer(serializers.ModelSerializer):
    task = serializers.CharField(source="row.task_name", read_only=True)
    instance = serializers.IntegerField(source="row.instance", read_only=True)

    class Meta:
        model = AgentFieldResult
        fields = ["task", "instance", "name", "type", "value", "gold", "score", "skipped", "error", "calls"]
        read_only_fields = fields


class ModelEndpointSerializer(serializers.ModelSerializer):
    """A model endpoint as the API shows it: the key is never shown back, only whether one is stored."""

    project = serializers.SlugRelatedField(slug_field="name", read_only=True)
    owner = serializers.SlugRelatedField(slug_field="username", read_only=True)
    has_key = serializers.BooleanField(read_only=True, help_text="Whether a key is stored (it is never shown).")

    class Meta:
        model = ModelEndpoint
        fields = ["id", "project", "name", "url", "model", "vision", "has_key", "owner", "created_at"]
        read_only_fields = fields


class ModelEndpointCreateSerializer(serializers.Serializer):
    project = serializers.SlugField(help_text="A project where you are a researcher or admin.")
    name = serializers.SlugField(max_length=64, help_text="Unique in the project.")
    url = serializers.CharField(max_length=500, help_text="The base URL, e.g. http://127.0.0.1:8000/v1.")
    model = serializers.CharField(max_length=200)
    key = serializers.CharField(
        required=False,
        allow_blank=True,
        default="",
        write_only=True,
        trim_whitespace=True,
        max_length=4096,
        help_text="The API key: stored as a secret, never shown back.",
    )
    vision = serializers.BooleanField(required=False, default=False)


class ModelEndpointChangeSerializer(serializers.Serializer):
    url = serializers.CharField(max_length=500, required=False)
    model = serializers.CharField(max_length=200, required=False)
    key = serializers.CharField(
        required=False,
        allow_blank=True,
        write_only=True,
        max_length=4096,
        help_text='A new key ("" removes it; absent keeps it).',
    )
    vision = serializers.BooleanField(required=False)
