"""Forms of the agents pages: a model endpoint (new, changed), the project's model limits and a new agent run. They
check types only; the rules (ranges, limits, the solver allow-list, the endpoint, the prompt template) live in
``annotation.actions.agents`` and ``annotation.actions.endpoints``, which the views call, as the API does."""

from django import forms

from ..actions.agents import RUN_MODEL_SETTINGS
from ..actions.endpoints import LIMITS, URL_CHANGE_NOTE
from ..models import AgentMetric, ModelLimits

SOLVERS = ("oracle", "do-nothing", "llm")
KEY_HELP = "Stored as a secret and never shown back."


class EndpointForm(forms.Form):
    name = forms.SlugField(max_length=64, help_text="Unique in the project, e.g. local-vllm.")
    url = forms.CharField(max_length=500, help_text="The base URL, e.g. http://127.0.0.1:8000/v1.")
    model = forms.CharField(max_length=200, help_text="The model's name at the endpoint.")
    key = forms.CharField(
        required=False, max_length=4096, strip=True, widget=forms.PasswordInput(render_value=False), help_text=KEY_HELP
    )
    vision = forms.BooleanField(required=False, help_text="The model reads images: prompts include a screenshot.")


class EndpointChangeForm(forms.Form):
    url = forms.CharField(max_length=500, help_text=URL_CHANGE_NOTE)
    model = forms.CharField(max_length=200)
    key = forms.CharField(
        required=False,
        max_length=4096,
        strip=True,
        widget=forms.PasswordInput(render_value=False),
        help_text="Leave empty to keep the stored key. " + KEY_HELP,
    )
    remove_key = forms.BooleanField(required=False, label="Remove the stored key")
    vision = forms.BooleanField(required=False)

    def changes(self) -> dict:
        """The action's changes: a key typed replaces the stored one, none keeps it, ``remove_key`` removes it."""
        data = self.cleaned_data
        key = "" if data["remove_key"] else (data["key"] or None)
        return {"url": data["url"], "model": data["model"], "vision": data["vision"], "key": key}


def optional_int(help_text="") -> forms.IntegerField:
    return forms.IntegerField(required=False, help_text=help_text)


class ModelLimitsForm(forms.Form):
    """The project's model limits (every one required: the page shows them all)."""

    max_tokens = forms.IntegerField(label="Tokens per answer", help_text="The most max_tokens a run may ask.")
    max_in_flight = forms.IntegerField(label="Requests in flight", help_text="The most model requests at once.")
    max_browsers = forms.IntegerField(label="Browsers", help_text="The most browsers of an llm agent run.")
    max_timeout = forms.FloatField(label="Seconds per request", help_text="The most a run may wait for an answer.")
    max_instances = forms.IntegerField(
        label="Instances per run", help_text="The most instances an llm agent run opens (over all its tasks)."
    )
    max_reply_bytes = forms.IntegerField(
        label="Bytes of a reply", help_text="A longer reply is cut there and fails its call."
    )

    @staticmethod
    def initial_from(limits: ModelLimits) -> dict:
        return {name: getattr(limits, name) for name in LIMITS}


class AgentRunForm(forms.Form):
    split = forms.ChoiceField(
        error_messages={"required": "This project has no form batches to run on yet: upload or import one first."},
        help_text="The project's splits that have form batches (how many in brackets).",
    )
    solver = forms.CharField(
        initial="oracle", max_length=200, help_text="oracle, do-nothing, llm, or python:module:Class (allow-listed)."
    )
    instances = optional_int("Instances per task (empty: every instance).")
    seed = forms.IntegerField(initial=0)
    metric = forms.ChoiceField(choices=AgentMetric.choices, initial=AgentMetric.OFFICIAL)
    browsers = optional_int("Headless browsers at once (empty: the worker's cores).")
    # The llm solver's settings (empty for the others).
    endpoint = forms.ChoiceField(required=False, help_text="llm: a model endpoint of the project.")
    temperature = forms.FloatField(required=False, help_text="llm (empty: 0).")
    max_tokens = optional_int("llm: per answer (empty: 1024).")
    in_flight = forms.IntegerField(
        required=False, label="Requests in flight", help_text="llm: model requests at once (empty: browsers)."
    )
    timeout = forms.FloatField(required=False, help_text="llm: seconds per request (empty: 60).")
    budget_requests = optional_int("llm: at most this many model requests (empty: no limit).")
    budget_tokens = optional_int("llm: at most this many tokens (empty: no limit).")
    prompt_template = forms.CharField(
        required=False,
        strip=False,
        widget=forms.Textarea(attrs={"rows": 6}),
        help_text="llm: empty for the default prompt; must contain {fields} (docs/agents.md).",
    )

    MODEL = RUN_MODEL_SETTINGS  # the llm settings, as the action names them

    def __init__(self, *args, endpoints=(), splits=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["endpoint"].choices = [("", "—")] + [(name, name) for name in endpoints]
        self.fields["split"].choices = [(name, f"{name} ({size})") for name, size in splits]

    def as_action(self) -> dict:
        data = self.cleaned_data
        return {
            "split": data["split"],
            "solver": data["solver"].strip(),
            "instances_per_task": data["instances"],
            "seed": data["seed"],
            "metric": data["metric"],
            "browsers": data["browsers"],
            **{name: data[name] for name in self.MODEL},
        }
