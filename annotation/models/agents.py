"""Agent runs on a project's form tasks (TurkingBench): a job row, one row per instance and one per field.

A run is a ``Job`` (status, progress, cancel, heartbeat): the API or ``manage.py run_agent`` creates it and the
worker (``workers/agents/runs.py``) fills it. Instance and field rows are written as the run goes, so a cancelled
run keeps what it scored; ``results`` (the scores of ``docs/agents.md``) is written when the run is done.
"""

from django.conf import settings
from django.db import models

from .exports import Job
from .forms import Project, Task


class AgentMetric(models.TextChoices):
    OFFICIAL = "official", "Official TurkingBench scorer"
    PAPER = "paper", "The paper's metric (§3.5)"


class ModelEndpoint(models.Model):
    """An OpenAI-compatible chat-completions endpoint a project's researchers use (the ``llm`` solver, ``predict``).

    The key is a secret: written through the API, never shown back, exported or logged (``repr`` leaves it out)."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="model_endpoints")
    name = models.SlugField(max_length=64, help_text="Unique in the project, e.g. local-vllm.")
    url = models.CharField(max_length=500, help_text="The base URL, e.g. http://127.0.0.1:8000/v1.")
    model = models.CharField(max_length=200, help_text="The model's name at the endpoint.")
    key = models.TextField(blank=True, help_text="The API key (secret: never shown back).")
    vision = models.BooleanField(default=False, help_text="The model reads images: prompts include a screenshot.")
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["project", "name"]
        constraints = [models.UniqueConstraint(fields=["project", "name"], name="model_endpoint_unique_name")]

    def __str__(self):
        return f"model endpoint {self.name} ({self.model} at {self.url})"

    def __repr__(self):
        return f"<ModelEndpoint {self.pk} {self.name!r}: {self.model!r} at {self.url!r}>"

    @property
    def has_key(self) -> bool:
        return bool(self.key)


class ModelLimits(models.Model):
    """A project's caps on the runs that ask its model endpoints (``llm`` agent runs, prediction runs): what a run
    may ask for (a larger value is a 400 naming the setting) and the most bytes of a reply read. A project without
    a row has the defaults; its admins change them (``annotation.actions.agents.do_change_model_limits``)."""

    project = models.OneToOneField(Project, on_delete=models.CASCADE, related_name="model_limits")
    max_tokens = models.PositiveIntegerField(default=4096, help_text="Most tokens a run may ask per answer.")
    max_in_flight = models.PositiveSmallIntegerField(default=8, help_text="Most model requests in flight at once.")
    max_browsers = models.PositiveSmallIntegerField(default=4, help_text="Most browsers of an llm agent run.")
    max_timeout = models.FloatField(default=300.0, help_text="Most seconds a run may wait for one answer.")
    max_instances = models.PositiveIntegerField(default=1000, help_text="Most instances an llm agent run opens.")
    max_reply_bytes = models.PositiveIntegerField(default=1024 * 1024, help_text="Most bytes of a reply read.")

    def __str__(self):
        return f"model limits of {self.project}"

    @classmethod
    def for_project(cls, project) -> "ModelLimits":
        """The project's limits: its row, or the defaults (unsaved: reading never writes)."""
        return cls.objects.filter(project=project).first() or cls(project=project)


class AgentRun(Job):
    """One solver over a seeded sample of a split's tasks (form batches of the project)."""

    split = models.CharField(max_length=64, help_text="test_easy, test_hard, subjective_test, train or all.")
    solver = models.CharField(max_length=200, help_text="oracle, do-nothing or python:module:Class.")
    instances_per_task = models.PositiveIntegerField(null=True, blank=True, help_text="Empty: every instance.")
    seed = models.IntegerField(default=0)
    metric = models.CharField(max_length=16, choices=AgentMetric.choices, default=AgentMetric.OFFICIAL)
    sampled = models.JSONField(default=dict, blank=True, help_text="{task: [instance indices]}, as drawn.")
    results = models.JSONField(
        default=dict, blank=True, help_text="The scores (docs/agents.md output format) once the run is done."
    )
    browsers = models.PositiveSmallIntegerField(
        null=True, blank=True, help_text="Headless Chromium instances at once (empty: the worker's cores)."
    )
    # The llm solver's settings (docs/agents.md, "The llm solver"); empty for other solvers.
    endpoint = models.ForeignKey(
        ModelEndpoint, on_delete=models.SET_NULL, null=True, blank=True, related_name="runs", help_text="llm only."
    )
    temperature = models.FloatField(default=0.0)
    max_tokens = models.PositiveIntegerField(default=1024, help_text="Per answer.")
    in_flight = models.PositiveSmallIntegerField(null=True, blank=True, help_text="Requests at once (empty: browsers).")
    timeout = models.FloatField(default=60.0, help_text="Seconds per request.")
    prompt_template = models.TextField(blank=True, help_text="Empty: the default prompt (docs/agents.md).")
    budget_requests = models.PositiveIntegerField(null=True, blank=True, help_text="At most this many model requests.")
    budget_tokens = models.PositiveBigIntegerField(null=True, blank=True, help_text="At most this many tokens.")
    # What the model cost, summed as the run goes.
    model_calls = models.PositiveIntegerField(default=0, help_text="Answers used (asked or from the cache).")
    cached_calls = models.PositiveIntegerField(default=0, help_text="Answers taken from the run's cache.")
    tokens_in = models.PositiveBigIntegerField(default=0)
    tokens_out = models.PositiveBigIntegerField(default=0)
    model_seconds = models.FloatField(default=0.0, help_text="Time spent waiting for answers.")
    activity = models.JSONField(
        default=dict,
        blank=True,
        help_text='Where the run is, with each heartbeat: {"done", "total", "browsers": [{"task", "instance", '
        '"field", "seconds"}]} (instances done of the total; what each browser works on, for how long).',
    )

    def __str__(self):
        return f"agent run {self.pk} of {self.project} ({self.solver}, {self.split}, {self.status})"


class AgentRunInstance(models.Model):
    """One instance a run opened: its score and the page as the solver left it."""

    run = models.ForeignKey(AgentRun, on_delete=models.CASCADE, related_name="instances")
    task = models.ForeignKey(Task, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    task_name = models.CharField(max_length=200, help_text="The batch (TurkingBench task) name.")
    instance = models.PositiveIntegerField(help_text="0-based distinct instance (Task.index).")
    score = models.FloatField(null=True, blank=True)
    screenshot = models.FileField(max_length=300, blank=True, help_text="The whole page after the solver, PNG.")
    answer = models.TextField(
        blank=True, help_text="llm: the model's answer for the page (the key masked, cut at MAX_ANSWER_CHARS)."
    )
    unapplied = models.JSONField(
        default=list, blank=True, help_text="llm: what of the answer no field took: [{line, field, reason}]."
    )
    ended = models.CharField(
        max_length=300, blank=True, help_text="Why the instance ended early (left its origin, past its time limit)."
    )
    ceiling = models.FloatField(
        null=True, blank=True, help_text="The best single annotator's score on the fields the run counted."
    )

    class Meta:
        ordering = ["run", "pk"]
        constraints = [
            models.UniqueConstraint(fields=["run", "task_name", "instance"], name="agent_run_instance_unique")
        ]

    def __str__(self):
        return f"{self.task_name}#{self.instance} in run {self.run_id}"


class AgentFieldResult(models.Model):
    """One field of one instance: what the page held after the solver, the gold answers and the score."""

    row = models.ForeignKey(AgentRunInstance, on_delete=models.CASCADE, related_name="fields")
    name = models.CharField(max_length=200)
    type = models.CharField(max_length=32, blank=True)
    value = models.TextField(null=True, blank=True, help_text="The value read from the page, as the scorer reads it.")
    gold = models.JSONField(default=list, blank=True, help_text="The annotators' answers.")
    score = models.FloatField(null=True, blank=True, help_text="Empty when the field is not scored (see skipped).")
    skipped = models.CharField(max_length=200, blank=True, help_text="Why the field is not scored.")
    error = models.TextField(blank=True, help_text="What the solver raised (the field then counts as untouched).")
    calls = models.JSONField(default=list, blank=True, help_text="The actions the solver took on this field.")
    ceiling = models.FloatField(null=True, blank=True, help_text="The instance's best annotator's score on it.")
    shortfall = models.TextField(blank=True, help_text="Why the field scores below its ceiling (agents/ceiling.py).")
    tokens_in = models.PositiveIntegerField(default=0, help_text="llm: tokens of the model call made for it.")
    tokens_out = models.PositiveIntegerField(default=0)
    model_seconds = models.FloatField(default=0.0)

    class Meta:
        ordering = ["row", "pk"]

    def __str__(self):
        return f"{self.name} of {self.row}"


class AgentModelAnswer(models.Model):
    """The answer cache of an llm run: a model answer by the hash of what was asked (``agents.llm.cache_key``), so
    a resumed run never asks the model again for what it already answered."""

    run = models.ForeignKey(AgentRun, on_delete=models.CASCADE, related_name="answers")
    key = models.CharField(max_length=64)
    text = models.TextField(blank=True)
    tokens_in = models.PositiveIntegerField(default=0)
    tokens_out = models.PositiveIntegerField(default=0)
    seconds = models.FloatField(default=0.0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["run", "key"], name="agent_model_answer_unique")]

    def __str__(self):
        return f"answer {self.key[:12]} of run {self.run_id}"


class PredictionRun(Job):
    """A model's predictions for one split of a project's WebLINX or Mind2Web export (``workers/agents/predict.py``):
    the worker exports the split, asks the endpoint for each WebLINX turn of ``turns`` or each Mind2Web step, keeps
    the predictions file, the answers it could not read (with the raw answer) and the usage; with ``evaluate`` it
    scores them on the same export."""

    format = models.CharField(max_length=16, help_text="weblinx or mind2web.")
    split = models.CharField(max_length=32)
    endpoint = models.ForeignKey(
        ModelEndpoint, on_delete=models.SET_NULL, null=True, blank=True, related_name="prediction_runs"
    )
    endpoint_name = models.CharField(max_length=64, help_text="The endpoint's name when the run was made.")
    model = models.CharField(max_length=200, blank=True, help_text="The model asked.")
    temperature = models.FloatField(default=0.0)
    max_tokens = models.PositiveIntegerField(default=256, help_text="Per answer.")
    in_flight = models.PositiveSmallIntegerField(default=4, help_text="Requests at once.")
    timeout = models.FloatField(default=60.0, help_text="Seconds per request.")
    candidates = models.PositiveSmallIntegerField(default=10, help_text="Mind2Web: choices shown.")
    turns = models.CharField(
        max_length=16,
        default="official",
        help_text="WebLINX: the turns asked and scored, official (the official code's) or all.",
    )
    evaluate = models.BooleanField(default=True, help_text="Score the predictions when they are made.")
    predictions = models.JSONField(default=list, blank=True, help_text="The predictions file (evaluations take it).")
    failures = models.JSONField(default=list, blank=True, help_text="Answers that could not be read, raw, with why.")
    usage = models.JSONField(default=dict, blank=True, help_text="Answers, cached, tokens in and out, model seconds.")
    results = models.JSONField(default=dict, blank=True, help_text="The evaluation of the predictions (evaluate).")
    stopped = models.TextField(blank=True, help_text="Why the run ended before every item was asked (a budget).")
    data_version = models.CharField(max_length=64, blank=True, help_text="sha256 of the export it predicted.")

    def __str__(self):
        return f"prediction run {self.pk} of {self.project} {self.format} {self.split} ({self.status})"
