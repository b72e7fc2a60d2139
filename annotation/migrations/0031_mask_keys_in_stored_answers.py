"""Answers stored before the client masked them: the endpoint's key (as ``agents.answers.redact_answer`` masks it)
out of every stored answer, field result and prediction run of a run whose endpoint still holds a key, and the
stored answers cut at 250,000 characters (``agents.answers.MAX_ANSWER_CHARS``). The rules are copied here, as a
migration keeps the code it ran with."""

from django.db import migrations
from django.db.models import Q, TextField
from django.db.models.functions import Cast, Length

MAX_ANSWER_CHARS = 250_000
LONG_KEY = 8


def mask(value, key: str):
    """``value`` (text, or JSON: lists, dicts) with ``key`` masked in every string."""
    if isinstance(value, str):
        return value.replace(key, "[key]") if len(key) >= LONG_KEY else value
    if isinstance(value, list):
        return [mask(item, key) for item in value]
    if isinstance(value, dict):
        return {name: mask(item, key) for name, item in value.items()}
    return value


def cut(text: str) -> str:
    if len(text) <= MAX_ANSWER_CHARS:
        return text
    more = len(text) - MAX_ANSWER_CHARS
    return f"{text[:MAX_ANSWER_CHARS]}\n[… {more} more characters cut: an answer is kept up to {MAX_ANSWER_CHARS:,}]"


def holding(rows, key: str, *names: str):
    """The rows where one of the ``names`` (text or JSON, read as text) contains ``key``."""
    casts = {f"{name}_text": Cast(name, TextField()) for name in names}
    found = Q()
    for name in casts:
        found |= Q(**{f"{name}__contains": key})
    return rows.annotate(**casts).filter(found)


def rewrite(rows, names: tuple, change) -> None:
    for row in rows.iterator(chunk_size=200):
        for name in names:
            setattr(row, name, change(getattr(row, name)))
        row.save(update_fields=list(names))


def forwards(apps, schema_editor):
    AgentRun = apps.get_model("annotation", "AgentRun")
    AgentModelAnswer = apps.get_model("annotation", "AgentModelAnswer")
    AgentRunInstance = apps.get_model("annotation", "AgentRunInstance")
    AgentFieldResult = apps.get_model("annotation", "AgentFieldResult")
    PredictionRun = apps.get_model("annotation", "PredictionRun")
    for run in AgentRun.objects.exclude(endpoint=None).exclude(endpoint__key="").select_related("endpoint"):
        key = run.endpoint.key
        if len(key) < LONG_KEY:
            continue

        def masked(value, key=key):
            return mask(value, key)

        rewrite(holding(AgentModelAnswer.objects.filter(run=run), key, "text"), ("text",), masked)
        rewrite(holding(AgentRunInstance.objects.filter(run=run), key, "answer"), ("answer",), masked)
        fields = AgentFieldResult.objects.filter(row__run=run)
        rewrite(holding(fields, key, "value", "error", "calls"), ("value", "error", "calls"), masked)
    for run in PredictionRun.objects.exclude(endpoint=None).exclude(endpoint__key="").select_related("endpoint"):
        key = run.endpoint.key
        if len(key) < LONG_KEY:
            continue
        rows = holding(PredictionRun.objects.filter(pk=run.pk), key, "failures", "predictions")
        rewrite(rows, ("failures", "predictions"), lambda value, key=key: mask(value, key))
    long = Q(length__gt=MAX_ANSWER_CHARS)
    rewrite(AgentModelAnswer.objects.annotate(length=Length("text")).filter(long), ("text",), cut)
    rewrite(AgentRunInstance.objects.annotate(length=Length("answer")).filter(long), ("answer",), cut)


class Migration(migrations.Migration):
    dependencies = [("annotation", "0030_agent_run_instance_unapplied")]

    operations = [migrations.RunPython(forwards, migrations.RunPython.noop)]
