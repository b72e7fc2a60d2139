"""Attack: an export job that ends early (a failing exporter, a cancel) must have stopped its read-ahead thread
(``dataset.read_ahead``) by the time the job is marked ended, whoever still holds the exception."""

import threading

import pytest

from annotation.models import ExportJob
from tests.support.corpus import ingest_corpus
from workers import runners
from workers.exports import jobs
from workers.exports.exporters import weblinx


def reading_ahead() -> bool:
    return any(thread.name == "export-read-ahead" for thread in threading.enumerate())


def failing_write_demo(*args, **kwargs):
    raise RuntimeError("the exporter failed on its first demo")


@pytest.mark.django_db(transaction=True)
def test_a_failed_export_job_is_marked_failed_only_after_its_read_ahead_thread_stopped(
    alpha, owner, media_storage, monkeypatch
):
    ingest_corpus(project="alpha", demos=6, turns=2, elements=16, seed=3)
    seen = []
    finish = runners.finish_clean

    def noting_finish(job, workdir, status, **fields):
        seen.append((status, reading_ahead()))
        return finish(job, workdir, status, **fields)

    monkeypatch.setattr(weblinx, "write_demo", failing_write_demo)
    monkeypatch.setattr(runners, "finish_clean", noting_finish)
    job = ExportJob.objects.create(project=alpha, owner=owner, format="weblinx", statuses=["validated"])
    jobs.run_export(job.pk)
    job.refresh_from_db()
    assert job.status == "failed"
    assert "first demo" in job.error
    assert seen == [("failed", False)], "the job was marked failed while its read-ahead thread still ran"


@pytest.mark.django_db(transaction=True)
def test_an_export_that_raised_leaves_no_read_ahead_thread_even_while_its_exception_is_kept(
    alpha, owner, media_storage, monkeypatch, tmp_path
):
    ingest_corpus(project="alpha", demos=6, turns=2, elements=16, seed=3)
    monkeypatch.setattr(weblinx, "write_demo", failing_write_demo)
    job = ExportJob.objects.create(project=alpha, owner=owner, format="weblinx", statuses=["validated"])
    with pytest.raises(RuntimeError, match="first demo") as raised:  # a logger or error reporter keeps it too
        jobs.export_and_publish(job, tmp_path)
    assert raised.value.__traceback__ is not None
    assert not reading_ahead(), "the read-ahead thread (and its DB connection) outlived the export"
