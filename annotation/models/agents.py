"""Agent runs on a project's form tasks (TurkingBench): a job row, one row per instance and one per field.

A run is a ``Job`` (status, progress, cancel, heartbeat): the API or ``manage.py run_agent`` creates it and the
worker (``workers/agents/runs.py``) fills it. Instance and field rows are written as the run goes, so a cancelled
run keeps what it scored; ``results`` (the scores of ``docs/agents.md``) is written when the run is done.
"""

from django.db import models

from .exports import Job
from .forms import Task


class AgentMetric(models.TextChoices):
    OFFICIAL = "official", "Official TurkingBench scorer"
    PAPER = "paper", "The paper's metric (§3.5)"


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

    class Meta:
        ordering = ["row", "pk"]

    def __str__(self):
        return f"{self.name} of {self.row}"
