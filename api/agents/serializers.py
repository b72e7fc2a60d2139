"""Serializers of agent runs on form tasks (``/api/agent-runs/``)."""

from rest_framework import serializers

from agents.llm import MAX_IN_FLIGHT, MAX_TEMPERATURE, MAX_TOKENS_LIMIT
from agents.llm_solver import MAX_TEMPLATE_CHARS
from annotation.actions.agents import MAX_BROWSERS, MAX_BUDGET, MAX_INSTANCES_PER_TASK, MAX_SEED
from annotation.actions.endpoints import LIMITS, URL_CHANGE_NOTE
from annotation.models import (
    AgentFieldResult,
    AgentRun,
    AgentRunInstance,
    ModelEndpoint,
    ModelLimits,
    PredictionRun,
)

from ..exports.serializers import JobFieldsMixin
from ..serializers import RejectUnknownFieldsMixin


class AgentRunSerializer(JobFieldsMixin, serializers.ModelSerializer):
    instances = serializers.IntegerField(
        source="instances_per_task", allow_null=True, help_text="Instances per task (null: all)."
    )
    results_page = serializers.SerializerMethodField(help_text="The run's results in the web app.")
    endpoint = serializers.SlugRelatedField(slug_field="name", read_only=True, help_text="llm: the model endpoint.")
    model = serializers.CharField(source="endpoint.model", read_only=True, default=None)

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
            "browsers",
            "endpoint",
            "model",
            "temperature",
            "max_tokens",
            "in_flight",
            "timeout",
            "prompt_template",
            "budget_requests",
            "budget_tokens",
            "model_calls",
            "cached_calls",
            "tokens_in",
            "tokens_out",
            "model_seconds",
            "status",
            "progress",
            "activity",
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


class AgentRunCreateSerializer(RejectUnknownFieldsMixin, serializers.Serializer):
    project = serializers.SlugField(help_text="A project where you are a researcher or admin.")
    split = serializers.CharField(
        required=False,
        allow_null=True,
        default=None,
        help_text="test_easy, test_hard, subjective_test, train, all, or a stored split list (default: test_easy "
        "when the project has it, else all).",
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
    browsers = serializers.IntegerField(
        required=False,
        allow_null=True,
        default=None,
        min_value=1,
        max_value=MAX_BROWSERS,
        help_text="Headless browsers at once (default: the worker's cores).",
    )
    # The llm solver's settings (docs/agents.md, "The llm solver").
    endpoint = serializers.SlugField(
        required=False, default=None, allow_null=True, help_text="llm: a model endpoint of the project (its name)."
    )
    temperature = serializers.FloatField(
        required=False, default=None, allow_null=True, min_value=0, max_value=MAX_TEMPERATURE
    )
    max_tokens = serializers.IntegerField(
        required=False,
        default=None,
        allow_null=True,
        min_value=1,
        max_value=MAX_TOKENS_LIMIT,
        help_text="Per answer (default 1024), at most the project's limit.",
    )
    in_flight = serializers.IntegerField(
        required=False,
        default=None,
        allow_null=True,
        min_value=1,
        max_value=MAX_IN_FLIGHT,
        help_text="Model requests at once (default: browsers), at most the project's limit.",
    )
    timeout = serializers.FloatField(
        required=False,
        default=None,
        allow_null=True,
        min_value=0.1,
        max_value=3600,
        help_text="Seconds per request (default 60), at most the project's limit.",
    )
    prompt_template = serializers.CharField(
        required=False,
        default=None,
        allow_null=True,
        allow_blank=True,
        trim_whitespace=False,
        max_length=MAX_TEMPLATE_CHARS,
        help_text="Empty: the default prompt; must contain {fields}.",
    )
    budget_requests = serializers.IntegerField(
        required=False, default=None, allow_null=True, min_value=1, max_value=MAX_BUDGET
    )
    budget_tokens = serializers.IntegerField(
        required=False, default=None, allow_null=True, min_value=1, max_value=2**62
    )


class AgentRunResumeSerializer(RejectUnknownFieldsMixin, serializers.Serializer):
    budget_requests = serializers.IntegerField(
        required=False, default=None, allow_null=True, min_value=1, max_value=MAX_BUDGET
    )
    budget_tokens = serializers.IntegerField(
        required=False, default=None, allow_null=True, min_value=1, max_value=2**62
    )


class AgentFieldResultSerializer(serializers.ModelSerializer):
    task = serializers.CharField(source="row.task_name", read_only=True)
    instance = serializers.IntegerField(source="row.instance", read_only=True)

    class Meta:
        model = AgentFieldResult
        fields = [
            "task",
            "instance",
            "name",
            "type",
            "value",
            "gold",
            "score",
            "ceiling",
            "shortfall",
            "skipped",
            "error",
            "calls",
            "tokens_in",
            "tokens_out",
            "model_seconds",
        ]
        read_only_fields = fields


class UnappliedSerializer(serializers.Serializer):
    line = serializers.CharField(help_text="The answer's line (cut at 500 characters); empty: the whole answer.")
    field = serializers.CharField(allow_null=True, help_text="The field it names, if any.")
    reason = serializers.CharField(help_text="Why no field took it.")


class AgentRunInstanceSerializer(serializers.ModelSerializer):
    """An instance a run opened: its score, the model's answer as stored (the key masked, at most
    ``MAX_ANSWER_CHARS`` characters) and what of it no field took."""

    task = serializers.CharField(source="task_name", read_only=True)
    unapplied = UnappliedSerializer(many=True, read_only=True)
    page = serializers.SerializerMethodField(help_text="The instance in the web app.")

    class Meta:
        model = AgentRunInstance
        fields = ["id", "task", "instance", "score", "ceiling", "ended", "answer", "unapplied", "page"]
        read_only_fields = fields

    def get_page(self, row) -> str:
        return self.context["request"].build_absolute_uri(f"/agents/runs/{row.run_id}/instances/{row.pk}/")


class ModelEndpointSerializer(serializers.ModelSerializer):
    """A model endpoint as the API shows it: the key is never shown back, only whether one is stored."""

    project = serializers.SlugRelatedField(slug_field="name", read_only=True)
    owner = serializers.SlugRelatedField(slug_field="username", read_only=True)
    has_key = serializers.BooleanField(read_only=True, help_text="Whether a key is stored (it is never shown).")

    class Meta:
        model = ModelEndpoint
        fields = ["id", "project", "name", "url", "model", "vision", "has_key", "owner", "created_at"]
        read_only_fields = fields


class ModelEndpointCreateSerializer(RejectUnknownFieldsMixin, serializers.Serializer):
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


class ModelEndpointChangeSerializer(RejectUnknownFieldsMixin, serializers.Serializer):
    url = serializers.CharField(max_length=500, required=False, help_text=URL_CHANGE_NOTE)
    model = serializers.CharField(max_length=200, required=False)
    key = serializers.CharField(
        required=False,
        allow_blank=True,
        write_only=True,
        max_length=4096,
        help_text='A new key ("" removes it; absent keeps it).',
    )
    vision = serializers.BooleanField(required=False)


class ModelLimitsSerializer(serializers.ModelSerializer):
    """A project's model limits (its defaults until an admin changes one)."""

    project = serializers.SlugRelatedField(slug_field="name", read_only=True)

    class Meta:
        model = ModelLimits
        fields = ["project", *LIMITS]
        read_only_fields = fields


def _limit_field(name: str) -> serializers.Field:
    setting, label, low, high, whole = LIMITS[name]
    kind = serializers.IntegerField if whole else serializers.FloatField
    return kind(required=False, min_value=low, max_value=high, help_text=f"The most {label}.")


class ModelLimitsChangeSerializer(RejectUnknownFieldsMixin, serializers.Serializer):
    """The limits to change (absent ones stay as they are)."""

    max_tokens = _limit_field("max_tokens")
    max_in_flight = _limit_field("max_in_flight")
    max_browsers = _limit_field("max_browsers")
    max_timeout = _limit_field("max_timeout")
    max_instances = _limit_field("max_instances")
    max_reply_bytes = _limit_field("max_reply_bytes")


class PredictionRunSerializer(JobFieldsMixin, serializers.ModelSerializer):
    """A prediction run; the endpoint by name only (its key never leaves the server). ``predictions`` (the file
    evaluations take) is at ``/api/prediction-runs/<id>/predictions/``."""

    predicted = serializers.SerializerMethodField(help_text="How many predictions were made.")
    results_page = serializers.SerializerMethodField(help_text="The run in the web app.")

    class Meta:
        model = PredictionRun
        fields = [
            "id",
            "project",
            "format",
            "split",
            "endpoint_name",
            "model",
            "temperature",
            "max_tokens",
            "in_flight",
            "timeout",
            "candidates",
            "turns",
            "evaluate",
            "status",
            "progress",
            "error",
            "predicted",
            "failures",
            "usage",
            "stopped",
            "results",
            "data_version",
            "owner",
            "created_at",
            "started_at",
            "finished_at",
            "results_page",
        ]
        read_only_fields = fields

    def get_predicted(self, run) -> int:
        return len(run.predictions)

    def get_results_page(self, run) -> str:
        return self.context["request"].build_absolute_uri(f"/agents/predictions/{run.pk}/")


class PredictionRunCreateSerializer(RejectUnknownFieldsMixin, serializers.Serializer):
    project = serializers.SlugField(help_text="A project where you are a researcher or admin.")
    format = serializers.CharField(help_text="weblinx or mind2web.")
    split = serializers.CharField(help_text="A split of the format (valid, test_iid, ...; train, test_task, ...).")
    endpoint = serializers.CharField(help_text="The name of one of the project's model endpoints.")
    temperature = serializers.FloatField(required=False, default=None, allow_null=True, help_text="Default 0.")
    max_tokens = serializers.IntegerField(
        required=False,
        default=None,
        allow_null=True,
        help_text="Per answer (default 256), at most the project's limit.",
    )
    in_flight = serializers.IntegerField(
        required=False,
        default=None,
        allow_null=True,
        help_text="Requests at once (default PREDICT_IN_FLIGHT), at most the project's limit.",
    )
    timeout = serializers.FloatField(
        required=False,
        default=None,
        allow_null=True,
        help_text="Seconds per request (default 60), at most the project's limit.",
    )
    candidates = serializers.IntegerField(
        required=False, default=None, allow_null=True, help_text="Mind2Web: choices shown (1 to 25, default 10)."
    )
    turns = serializers.CharField(
        required=False,
        default=None,
        allow_null=True,
        help_text="WebLINX: official (default: the turns the official code predicts) or all (every turn but the "
        "instructor's chat); asked and scored.",
    )
    evaluate = serializers.BooleanField(required=False, default=True, help_text="Score the predictions at once.")
