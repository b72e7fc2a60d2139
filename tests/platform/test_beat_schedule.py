"""Celery beat's schedule (``CELERY_BEAT_SCHEDULE``): every entry names a task the workers have."""

from django.conf import settings

from config.celery import app


def test_every_periodic_task_is_a_registered_task():
    app.loader.import_default_modules()  # what a worker imports at start
    scheduled = {entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values()}
    assert {
        "workers.sweep_export_folders",
        "workers.sweep_staged_blobs",
        "workers.expire_assignments",
        "workers.auto_approve_assignments",
    } <= scheduled
    assert scheduled <= set(app.tasks)
    assert all(entry["schedule"] > 0 for entry in settings.CELERY_BEAT_SCHEDULE.values())
