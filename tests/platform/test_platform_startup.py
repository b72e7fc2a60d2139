"""Process start: every server, Celery worker and ``manage.py`` command loads the apps, and with them every action
module. The scoring and aggregation libraries (rouge-score → nltk → scipy, sklearn; crowd-kit → pandas; openai)
cost seconds of each start on two cores; they load where they are used, not when the apps load."""

import json

import pytest

from tests.support.processes import run_python

# Loaded only by the code that uses them: ROUGE-L, Dawid–Skene, a TurkingBench batch, a model endpoint.
HEAVY = ("rouge_score", "nltk", "scipy", "sklearn", "crowdkit", "pandas", "openai")

LOADED = f"""
import json, sys
import django
django.setup()
import config.asgi, config.celery, workers.tasks, api.urls
print(json.dumps(sorted(name for name in {HEAVY!r} if name in sys.modules)))
"""

USED = """
import json, sys
import django
django.setup()
from agents.scoring import rouge_l
from annotation.lib.agreement import dawid_skene
rouge = rouge_l("the cats sat", "the cat sat")
labels = dawid_skene([("t1", "w1", "a"), ("t1", "w2", "a"), ("t1", "w3", "b"), ("t2", "w1", "b"), ("t2", "w2", "b")])
print(json.dumps({"rouge": round(rouge, 3), "labels": labels, "loaded": "nltk" in sys.modules}))
"""


@pytest.mark.processes
def test_the_apps_the_server_and_the_worker_load_none_of_the_scoring_libraries(tmp_path):
    started = run_python(LOADED, tmp_path, DEBUG="1")

    assert started.returncode == 0, started.stderr
    assert json.loads(started.stdout.strip().splitlines()[-1]) == []


@pytest.mark.processes
def test_the_scoring_libraries_load_when_a_score_is_asked_for(tmp_path):
    used = run_python(USED, tmp_path, DEBUG="1")

    assert used.returncode == 0, used.stderr
    assert json.loads(used.stdout.strip().splitlines()[-1]) == {
        "rouge": 1.0,  # Porter stemming: "cats" is "cat"
        "labels": {"t1": "a", "t2": "b"},
        "loaded": True,
    }
