"""The data migration for answers stored before the client masked and cut them: the endpoint's key leaves every
stored answer, field result and prediction run, and stored answers are cut at ``MAX_ANSWER_CHARS``; rows of other
runs, and a run whose endpoint holds no key, stay as they are."""

import importlib

import pytest
from django.apps import apps

from agents.answers import MAX_ANSWER_CHARS
from annotation.models import (
    AgentFieldResult,
    AgentModelAnswer,
    AgentRun,
    AgentRunInstance,
    ModelEndpoint,
    PredictionRun,
)

pytestmark = pytest.mark.django_db
KEY = "sk-stored-before-SECRET-1357"


def run_with(alpha, researcher, name: str, key: str, text: str) -> AgentRun:
    endpoint = ModelEndpoint.objects.create(
        project=alpha, name=name, url="http://127.0.0.1:9/v1", model="m", key=key, owner=researcher
    )
    run = AgentRun.objects.create(project=alpha, owner=researcher, split="all", solver="llm", endpoint=endpoint)
    AgentModelAnswer.objects.create(run=run, key="a" * 64, text=text)
    row = AgentRunInstance.objects.create(run=run, task_name="T", instance=0, answer=text)
    AgentFieldResult.objects.create(
        row=row,
        name="q",
        type="text",
        value=f"Bearer {key}",
        error=f"'{key}' failed",
        calls=[f"modify_text('q', '{key}')"],
    )
    return run


def test_the_migration_masks_the_key_in_stored_answers_and_cuts_long_ones(alpha, researcher):
    migration = importlib.import_module("annotation.migrations.0031_mask_keys_in_stored_answers")
    long_text = f"Bearer {KEY}\n" + "y" * (MAX_ANSWER_CHARS + 500)
    run = run_with(alpha, researcher, "echo", KEY, long_text)
    keyless = run_with(alpha, researcher, "open", "", f"no key here {KEY}")
    prediction = PredictionRun.objects.create(
        project=alpha,
        owner=researcher,
        format="weblinx",
        split="test",
        endpoint=run.endpoint,
        endpoint_name="echo",
        failures=[{"demo_name": "d", "turn_index": 1, "answer": f"key {KEY}", "error": "no intent"}],
        predictions=[{"demo_name": "d", "turn_index": 1, "prediction": f"say(text='{KEY}')"}],
    )

    migration.forwards(apps, None)

    answer = AgentModelAnswer.objects.get(run=run)
    row = AgentRunInstance.objects.get(run=run)
    for text in (answer.text, row.answer):
        assert text.startswith("Bearer [key]\nyyy")
        assert "more characters cut" in text
        assert MAX_ANSWER_CHARS < len(text) < MAX_ANSWER_CHARS + 100
    field = AgentFieldResult.objects.get(row=row)
    assert (field.value, field.error, field.calls) == ("Bearer [key]", "'[key]' failed", ["modify_text('q', '[key]')"])
    prediction.refresh_from_db()
    assert prediction.failures[0]["answer"] == "key [key]"
    assert prediction.predictions[0]["prediction"] == "say(text='[key]')"
    untouched = AgentRunInstance.objects.get(run=keyless)
    assert untouched.answer == f"no key here {KEY}"  # that run's endpoint has no key: nothing to mask
