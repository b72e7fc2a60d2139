"""Export values read ahead of the exporter (``dataset.read_ahead``): made in a thread of their own on its own
connection (closed when done), the same values in the same order, failures raised to the job, a job that stops
early stops the thread; inline inside a transaction, whose rows another connection would not see."""

import json
import tarfile
import threading

import pytest
from django.db import connection, transaction

from annotation.models import ExportJob, Project
from tests.support.corpus import ingest_corpus
from tests.support.payloads import sha
from tests.support.waits import wait_until
from workers.exports.dataset import read_ahead
from workers.exports.jobs import run_export
from workers.exports.mind2web_steps import process_demo


def backends() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()")
        return cursor.fetchone()[0]


@pytest.fixture
def projects(db):
    return [Project.objects.create(name=f"p{n}", title=f"P{n}") for n in range(5)]


@pytest.mark.django_db(transaction=True)
def test_values_are_made_in_a_thread_of_their_own_whose_connection_is_closed_after(projects):
    before, made_in = backends(), []

    def names():
        for project in Project.objects.order_by("name"):
            made_in.append((threading.current_thread().name, connection.connection is not None))
            yield project.name

    assert list(read_ahead(names())) == ["p0", "p1", "p2", "p3", "p4"]
    assert made_in == [("export-read-ahead", True)] * 5  # its own connection, opened by its query
    assert wait_until(lambda: backends() == before, timeout=30), "the thread's connection stayed open"


@pytest.mark.django_db(transaction=True)
def test_a_failure_while_reading_ahead_is_raised_to_the_caller_after_the_values_before_it(projects):
    def failing():
        yield from Project.objects.order_by("name").values_list("name", flat=True)[:2]
        raise LookupError("demo p2 could not be read")

    values = read_ahead(failing())
    assert [next(values), next(values)] == ["p0", "p1"]
    with pytest.raises(LookupError, match="could not be read"):
        next(values)


@pytest.mark.django_db(transaction=True)
def test_a_caller_that_stops_early_stops_the_thread_and_closes_the_values(projects):
    closed = threading.Event()

    def endless():
        try:
            while True:
                yield from Project.objects.order_by("name").values_list("name", flat=True)
        finally:
            closed.set()

    values = read_ahead(endless())
    assert [next(values) for _ in range(7)] == ["p0", "p1", "p2", "p3", "p4", "p0", "p1"]
    values.close()
    assert closed.is_set()
    assert not any(thread.name == "export-read-ahead" for thread in threading.enumerate())


def test_inside_a_transaction_the_values_are_made_inline(projects):
    """pytest-django's test transaction: another connection would see no projects at all."""

    def names():
        for project in Project.objects.order_by("name"):
            yield project.name, threading.current_thread() is threading.main_thread()

    assert list(read_ahead(names())) == [(f"p{n}", True) for n in range(5)]


def members(path) -> dict:
    with tarfile.open(path) as tarred:
        return {m.name.partition("/")[2]: tarred.extractfile(m).read() for m in tarred.getmembers() if m.isfile()}


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("export_format", ["weblinx", "mind2web"])
def test_an_export_job_read_ahead_writes_the_archive_the_inline_one_does(alpha, owner, media_storage, export_format):
    for demo in ingest_corpus(project="alpha", demos=5, turns=16, elements=40, seed=5):
        process_demo(demo)  # as validation has the worker do
    archives = []
    for inline in (False, True):
        job = ExportJob.objects.create(project=alpha, owner=owner, format=export_format, statuses=["validated"])
        if inline:
            with transaction.atomic():
                run_export(job.pk)
        else:
            run_export(job.pk)
        job.refresh_from_db()
        assert job.status == "done", job.error
        stored = (media_storage / job.file.name).read_bytes()
        assert (job.sha256, job.size) == (sha(stored), len(stored))  # hashed as written
        archives.append(members(media_storage / job.file.name))
    threaded, inline = archives
    threaded.pop("quality.json"), inline.pop("quality.json")  # its generated_at differs; its items are checked below
    manifests = [json.loads(files.pop("manifest.json"))["files"] for files in (threaded, inline)]
    for manifest in manifests:
        manifest.pop("quality.json")
    assert threaded == inline
    assert len(threaded) > 10
    assert manifests[0] == manifests[1]
    assert all(manifests[0][name] == {"sha256": sha(data), "size": len(data)} for name, data in inline.items())
