"""The one place background work is enqueued: by task name, with ids only, once the caller's transaction commits.

The domain never imports ``workers/``: it names the task (the worker registers it under that name) and sends plain
ids, so the worker loads fresh rows itself. A broker that cannot be reached is never papered over by running the
work inline: ``on_failure`` lets the caller record it (a job is marked failed with the reason) and it is logged.
"""

import logging
from collections.abc import Callable

from django.db import transaction

log = logging.getLogger(__name__)

# Task names, as ``workers/tasks.py`` registers them.
EXPORT = "workers.run_export_job"
EVALUATION = "workers.run_evaluation"
THUMBNAILS = "workers.make_thumbnails"
REALIGN = "workers.realign_demo"
AGENT_RUN = "workers.run_agent"
PREDICTION = "workers.run_prediction"
PACK_BLOBS = "workers.pack_demo_blobs"
IMPORT = "workers.run_import_job"
MIND2WEB_STEPS = "workers.process_mind2web_steps"
REPLAY = "workers.replay_task"
TASK_NAMES = (
    EXPORT,
    EVALUATION,
    THUMBNAILS,
    REALIGN,
    AGENT_RUN,
    PREDICTION,
    PACK_BLOBS,
    IMPORT,
    MIND2WEB_STEPS,
    REPLAY,
)


def check_plain_args(args: tuple) -> None:
    """Ids only: integers, strings, or lists of them (never model instances or request data)."""
    for arg in args:
        items = arg if isinstance(arg, list) else [arg]
        if not all(isinstance(item, (int, str)) and not isinstance(item, bool) for item in items):
            raise TypeError(f"enqueue takes ids (int, str or lists of them), not {type(arg).__name__}")


def send(task: str, *args) -> None:
    """Publish the task now (the broker from settings, a fresh connection, Celery's publish retry policy)."""
    from config.celery import app

    with app.connection_for_write() as connection:
        app.send_task(task, args=list(args), connection=connection)


def enqueue(task: str, *args, on_failure: Callable[[Exception], None] | None = None) -> None:
    """Send ``task(*args)`` to the queue after the current transaction commits (at once outside one).

    When the broker cannot be reached the error is logged and ``on_failure(error)`` is called."""
    if task not in TASK_NAMES:
        raise ValueError(f"unknown task {task!r}; known: {', '.join(TASK_NAMES)}")
    check_plain_args(args)

    def publish():
        try:
            send(task, *args)
        except Exception as error:  # kombu raises many kinds: connection, timeout, DNS, ...
            log.exception("could not enqueue %s%r", task, args)
            if on_failure is not None:
                on_failure(error)

    transaction.on_commit(publish)
