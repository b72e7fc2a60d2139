"""Process start: every server, Celery worker and ``manage.py`` command loads the apps, and with them every action
module. The scoring and aggregation libraries (rouge-score → nltk → scipy, sklearn; crowd-kit → pandas; openai)
cost seconds of each start on two cores; they load where they are used (``agents.lazy``), not when the apps load,
and a server's request threads using them for the first time at once each get them whole."""

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


# A gold answer scored (ROUGE-L) and an agreement page (Dawid–Skene) on two request threads of a new server process:
# both first uses at the same moment, then each again. Without one lock the two routes into nltk's circular imports
# left a half-loaded nltk and every later score in the process failed.
AT_ONCE = """
import json, threading
import django
django.setup()
from agents.scoring import rouge_l
from annotation.lib.agreement import dawid_skene
rows = [("t1", "w1", "a"), ("t1", "w2", "a"), ("t1", "w3", "b"), ("t2", "w1", "b"), ("t2", "w2", "b")]
uses = {"rouge": lambda: round(rouge_l("the cats sat", "the cat sat"), 3), "labels": lambda: dawid_skene(rows)}
barrier, results = threading.Barrier(len(uses)), {}

def use(name):
    barrier.wait()
    try:
        results[name] = uses[name]()
    except Exception as error:
        results[name] = f"{type(error).__name__}: {error}"

threads = [threading.Thread(target=use, args=(name,)) for name in uses]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
again = {name: uses[name]() for name in uses}
print(json.dumps({"at_once": results, "again": again}))
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


@pytest.mark.processes
def test_two_request_threads_using_rouge_and_dawid_skene_first_at_once_both_get_them(tmp_path):
    done = run_python(AT_ONCE, tmp_path, DEBUG="1")

    assert done.returncode == 0, done.stderr
    expected = {"rouge": 1.0, "labels": {"t1": "a", "t2": "b"}}
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {"at_once": expected, "again": expected}
