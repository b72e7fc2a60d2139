"""One way to queue work: the domain enqueues tasks by name through ``annotation.actions.queue`` and never imports
``workers/``; a broker that cannot be reached fails the job visibly."""

import ast
from pathlib import Path

import pytest

from annotation.actions import queue
from annotation.models import ExportJob, JobStatus
from config.celery import app
from devtools.processes import free_port

ANNOTATION = Path(__file__).resolve().parents[2] / "annotation"


def imported_modules(path: Path) -> set[str]:
    """Every module an ``import``/``from ... import`` in the file names (absolute imports; relative ones stay inside
    their package)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module)
    return found


def test_nothing_in_annotation_imports_workers():
    offenders = {
        str(path.relative_to(ANNOTATION.parent)): sorted(
            module for module in imported_modules(path) if module.split(".")[0] == "workers"
        )
        for path in sorted(ANNOTATION.rglob("*.py"))
    }
    assert {path: modules for path, modules in offenders.items() if modules} == {}


def test_every_task_the_domain_names_is_registered_by_the_worker():
    import workers.tasks  # noqa: F401  (registers the tasks, as the worker does at start)

    assert set(queue.TASK_NAMES) <= set(app.tasks)


def test_enqueue_takes_ids_only_and_known_task_names():
    with pytest.raises(TypeError, match="ids"):
        queue.enqueue(queue.EXPORT, {"project": "alpha"})
    with pytest.raises(ValueError, match="unknown task"):
        queue.enqueue("workers.nope", 1)


@pytest.fixture
def unreachable_broker():
    """The platform's own broker setting pointed at a port where nothing listens (a broker that is down)."""
    previous = app.conf.broker_url
    app.conf.broker_url = f"redis://127.0.0.1:{free_port()}/0"
    try:
        yield
    finally:
        app.conf.broker_url = previous


@pytest.mark.django_db(transaction=True)
def test_an_export_whose_broker_cannot_be_reached_fails_visibly(researcher, api_for, unreachable_broker):
    response = api_for(researcher).post("/api/exports/", {"project": "alpha", "format": "weblinx"}, format="json")

    assert response.status_code == 202
    job = ExportJob.objects.get(pk=response.json()["id"])
    assert job.status == JobStatus.FAILED
    assert job.error.startswith("could not reach the task queue")
