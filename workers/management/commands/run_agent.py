"""`python manage.py run_agent`: run a solver on a split of a project's form tasks, here, and write its scores.

    manage.py run_agent --project P --split test_easy --solver oracle|do-nothing|llm|python:module:Class \\
        --instances N --seed S --out DIR [--metric paper] [--user NAME] [--browsers N] \\
        [--endpoint NAME --temperature T --max-tokens N --timeout S --in-flight N --budget-requests N]

The run is stored like one started through ``POST /api/agent-runs/`` (visible in the API and the web app), but
runs in this process, in its own headless Chromium. It always ends, and says how: done (and why it stopped early:
a spent budget, instances past their time limit), failed (why), or cancelled: Ctrl-C or SIGTERM cancels it with
the reason, ends its browsers and exits non-zero within seconds, even with a model request in flight. DIR gets
``scores.json`` (the evaluation output of ``docs/agents.md`` plus solver, seed and sampled) and ``actions.json``
(the calls per field; the oracle's are the gold action sequences).
"""

import contextlib
import json
import signal
import threading
from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management import BaseCommand, CommandError
from django.db import connection

from annotation.actions import ActionError, Conflict, do_cancel_job, do_create_agent_run
from annotation.actions.agents import RUN_MODEL_SETTINGS
from annotation.models import AgentRun, JobStatus, Project
from workers.agents.runs import action_sequences, execute

from ...runners import run_job


class Command(BaseCommand):
    help = "Run a solver (oracle, do-nothing, llm or python:module:Class) on a split of a project's form tasks."

    def add_arguments(self, parser):
        parser.add_argument("--project", required=True)
        parser.add_argument(
            "--split",
            help="test_easy, test_hard, subjective_test, train, all (default: test_easy if present, else all).",
        )
        parser.add_argument("--solver", required=True, help="oracle, do-nothing or python:module:Class.")
        parser.add_argument("--instances", type=int, default=None, help="Instances per task (default: all).")
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--metric", choices=("official", "paper"), default="official")
        parser.add_argument("--out", required=True, type=Path, help="Folder for scores.json and actions.json.")
        parser.add_argument("--user", help="The run's owner (default: the first superuser).")
        parser.add_argument("--browsers", type=int, help="Headless browsers at once (default: the cores).")
        parser.add_argument("--endpoint", help="llm: the project's model endpoint (its name).")
        parser.add_argument("--temperature", type=float)
        parser.add_argument("--max-tokens", type=int)
        parser.add_argument("--timeout", type=float, help="llm: seconds per request.")
        parser.add_argument("--in-flight", type=int, help="llm: model requests at once.")
        parser.add_argument("--budget-requests", type=int, help="llm: at most this many model requests.")
        parser.add_argument("--budget-tokens", type=int, help="llm: at most this many tokens.")

    def handle(self, *args, **options):
        project = Project.objects.filter(name=options["project"]).first()
        if project is None:
            raise CommandError(f"no project {options['project']!r}")
        owner = self.owner(options["user"])
        try:
            run = do_create_agent_run(
                owner,
                project,
                options["split"],
                options["solver"],
                options["instances"],
                options["seed"],
                options["metric"],
                from_api=False,
                send=False,
                browsers=options["browsers"],
                **{name: options.get(name) for name in RUN_MODEL_SETTINGS if name != "prompt_template"},
            )
        except ActionError as error:
            raise CommandError(error.detail) from error
        self.stderr.write(f"agent run {run.pk}: {run.solver} on {project.name} {run.split}")
        with interruptible():
            try:
                run_job(AgentRun, run.pk, execute)
            except KeyboardInterrupt as interrupt:
                raise CommandError(cancelled(run, getattr(interrupt, "why", INTERRUPTED))) from None
        run.refresh_from_db()
        if run.status != JobStatus.DONE:
            why = run.error or "by its owner or a project admin (the API or the web app)"
            raise CommandError(f"agent run {run.pk} {run.status}: {why}")
        out = options["out"]
        out.mkdir(parents=True, exist_ok=True)
        (out / "scores.json").write_text(json.dumps(run.results, indent=2) + "\n")
        (out / "actions.json").write_text(json.dumps(action_sequences(run), indent=2) + "\n")
        results = run.results
        self.stdout.write(
            f"agent run {run.pk} ({results['metric']} metric): {len(results['instances'])} instances, "
            f"overall {results['overall']}; written to {out / 'scores.json'}"
        )
        for line in stopped_early(results):
            self.stdout.write(line)

    def owner(self, username):
        users = get_user_model().objects
        user = users.filter(username=username).first() if username else users.filter(is_superuser=True).first()
        if user is None:
            raise CommandError(f"no user {username!r}" if username else "no superuser: give --user")
        return user


INTERRUPTED, TERMINATED = "interrupted (Ctrl-C)", "terminated (SIGTERM)"


class Interrupted(KeyboardInterrupt):
    """SIGINT or SIGTERM during the run; ``why`` is the reason the run is cancelled with."""

    def __init__(self, why: str):
        super().__init__(why)
        self.why = why


@contextlib.contextmanager
def interruptible():
    """Ctrl-C (unless this process ignores SIGINT) and SIGTERM raise ``Interrupted`` in the main thread, once: later
    ones are ignored while the run ends (its browsers ended, ``agents.parallel``). The handlers are restored after."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    reasons = {signal.SIGINT: INTERRUPTED, signal.SIGTERM: TERMINATED}
    previous = {number: signal.getsignal(number) for number in reasons}

    def interrupt(number, frame):
        for other in reasons:
            signal.signal(other, signal.SIG_IGN)
        raise Interrupted(reasons[number])

    try:
        for number in reasons:
            if previous[number] != signal.SIG_IGN:
                signal.signal(number, interrupt)
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


def cancelled(run: AgentRun, why: str) -> str:
    """Cancel the interrupted run with ``why``; what to say (a run that had already ended, e.g. failed as stale
    while the interrupt was handled, is said as it is)."""
    if not connection.in_atomic_block:
        connection.close()  # the interrupt may have landed in a query: a new connection
    try:
        do_cancel_job(run, reason=why)
    except Conflict:
        run.refresh_from_db()
        ended = f"{run.status}: {run.error}" if run.error else run.status
        return f"agent run {run.pk} {why}, but it had already ended ({ended})"
    return f"agent run {run.pk} cancelled: {why}"


def stopped_early(results: dict) -> list[str]:
    """Why a done run stopped before the end, and which instances ended early and why."""
    lines = [f"stopped early: {results['stopped']}"] if results.get("stopped") else []
    lines += [f"{i['task']} #{i['instance']} ended early: {i['ended']}" for i in results["instances"] if i.get("ended")]
    return lines
