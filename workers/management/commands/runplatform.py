"""`python manage.py runplatform`: set up on first run, then serve HTTP + WebSocket and run Celery (worker + beat).

This is what `make run` calls. Without ``SECRET_KEY`` in the environment it keeps a random key in
``var/secret_key`` (created on the first run, mode 0600; the server and worker read it through the settings). It
then runs the system checks (a known development key with ``DEBUG`` off stops it here), migrates, creates the
admin account and the sample project (first run only), then starts one ASGI server (uvicorn), one real Celery
worker and Celery beat (periodic tasks) as child processes and supervises them: if one dies the others are
stopped; Ctrl-C (SIGINT) or SIGTERM (to this process or to its process group) stops them all cleanly: SIGTERM to
each child, SIGQUIT (the worker's cold shutdown) to any still running 30 s later, SIGKILL 20 s after that (a
worker finishing a task on a loaded machine needs more than 10 s).
"""

import contextlib
import os
import secrets
import signal
import subprocess
import sys
import time

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core import checks
from django.core.management import BaseCommand, call_command

from annotation.actions.manage import setup
from annotation.models import Project, Role
from config.secret_key import FILE_NAME, ensure_key_file
from config.serve import dies_with_this_process
from config.server import server_command

from .. import sample

SAMPLE_PROJECT = "sample"
CREDENTIALS_FILE = "admin-credentials.txt"


class Command(BaseCommand):
    help = "Migrate, create the admin and sample data on first run, then run the ASGI server, a Celery worker and beat."
    requires_system_checks = []  # run in handle(), once the secret key is in place

    def add_arguments(self, parser):
        parser.add_argument("--host", default=os.environ.get("HOST", "127.0.0.1"))
        parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8000")))
        parser.add_argument("--no-sample", action="store_true", help="Do not create the sample project.")
        parser.add_argument("--sample-demos", type=int, default=6, help="Synthetic demos in the sample project.")

    def handle(self, *args, **options):
        self.ensure_secret_key()
        self.check(fail_level=checks.ERROR)
        call_command("migrate", interactive=False, verbosity=0)
        self.stdout.write(
            f"Database: {settings.DATABASES['default']['ENGINE'].rsplit('.', 1)[-1]}; "
            f"broker: {settings.CELERY_BROKER_URL.split('://')[0]}; files: {settings.VAR_DIR}"
        )
        admin = self.ensure_admin()
        if not options["no_sample"]:
            self.ensure_sample(admin, options["sample_demos"])
        self.serve(options["host"], options["port"])

    def ensure_secret_key(self):
        """Without ``SECRET_KEY`` set, use (and on the first run create) the random key in ``var/secret_key``."""
        if os.environ.get("SECRET_KEY"):
            return
        path = settings.VAR_DIR / FILE_NAME
        key, created = ensure_key_file(path)
        settings.SECRET_KEY = key  # this process read its settings before the file existed
        if created:
            self.stdout.write(f"Created a random secret key in {path} (keep it private; set SECRET_KEY to override)")

    def ensure_admin(self):
        """Create the ``admin`` superuser with a random password on first run, and say where to find it."""
        users = get_user_model().objects
        path = settings.VAR_DIR / CREDENTIALS_FILE
        if users.filter(is_superuser=True).exists():
            admin = users.filter(is_superuser=True).order_by("pk").first()
            where = f" (first-run credentials in {path})" if path.exists() else ""
            self.stdout.write(f"Admin account: {admin.username}{where}")
            return admin
        password = secrets.token_urlsafe(12)
        admin, token = setup.do_create_first_admin("admin", "admin@localhost", password)
        path.write_text(f"username: admin\npassword: {password}\napi token: {token.key}\n")
        path.chmod(0o600)
        self.stdout.write(
            self.style.SUCCESS(
                f"Created admin account\n  username: admin\n  password: {password}\n  api token: {token.key}\n"
                f"  (saved in {path})"
            )
        )
        return admin

    def ensure_sample(self, admin, demos):
        """A sample project with synthetic demonstrations, created once; delete the project to get it again."""
        if Project.objects.filter(name=SAMPLE_PROJECT).exists():
            return
        self.stdout.write(f"Creating sample project {SAMPLE_PROJECT!r} with {demos} synthetic demonstrations ...")
        # Dated over the last 200 days (activity heatmaps), with other frames per action (re-alignment candidates).
        call_command(
            "synth_demos",
            demos=demos,
            turns=40,
            elements=300,
            seed=1,
            project=SAMPLE_PROJECT,
            frames=True,
            recent=True,
            stdout=self.stdout,
        )
        project = Project.objects.get(name=SAMPLE_PROJECT)
        setup.do_ensure_member(project, admin, Role.ADMIN)
        # Exports take validated demos by default: validate all but two, which are left for review.
        names = list(project.demonstrations.order_by("name").values_list("name", flat=True))[: max(0, demos - 2)]
        setup.do_validate_sample_demos(project, names)
        users, password = sample.ensure_team(project)
        sample.answered_form_batch(project, admin, users)
        sample.mind2web_project(admin, users)
        team = ", ".join(f"{name} ({role})" for name, role in sample.TEAM.items())
        path = settings.VAR_DIR / CREDENTIALS_FILE
        if path.exists():
            with path.open("a") as credentials:
                credentials.write(f"sample team: {team}\nsample team password: {password}\n")
        self.stdout.write(
            f"Sample team {team}, password {password}; a form batch they answered; the {sample.MIND2WEB_PROJECT!r} "
            "project with websites, proposals and a demonstration"
        )

    def serve(self, host, port):
        children = {
            "server": start(server_command(host, port)),
            "worker": start(
                [
                    sys.executable,
                    "-m",
                    "celery",
                    "-A",
                    "config",
                    "worker",
                    "--loglevel",
                    "INFO",
                    "--concurrency",
                    os.environ.get("WORKER_CONCURRENCY", "2"),
                ]
            ),
            # Periodic tasks (settings.CELERY_BEAT_SCHEDULE): sweeping killed exports' folders, expiring assignments.
            "beat": start(beat_command()),
        }
        self.stdout.write(
            self.style.SUCCESS(
                f"Serving on http://{host}:{port}/ (admin at /admin/, API docs at /api/docs/). Press Ctrl-C to stop."
            )
        )
        signal.signal(signal.SIGTERM, interrupt)
        # Python leaves SIGINT ignored when it started ignored (a background job of a script): Ctrl-C must still work.
        signal.signal(signal.SIGINT, signal.default_int_handler)
        try:
            exited = wait_any(children)
            self.stderr.write(f"The {exited} process stopped (exit {children[exited].returncode}); stopping the rest.")
            code = 1
        except KeyboardInterrupt:
            self.stdout.write("Stopping (the worker first finishes its current task, up to 30 s) ...")
            code = 0
        killed = stop_all(children)
        ended = ", ".join(f"{name} {'killed' if name in killed else 'stopped'}" for name in children)
        self.stdout.write(f"Stopped: {ended}.")
        sys.exit(code)


def beat_command() -> list[str]:
    """Celery beat, its schedule state kept under VAR_DIR."""
    schedule = settings.CELERY_BEAT_SCHEDULE_FILENAME
    return [sys.executable, "-m", "celery", "-A", "config", "beat", "--loglevel", "INFO", "--schedule", schedule]


def interrupt(signum, frame):
    """Treat SIGTERM like Ctrl-C: stop the children cleanly."""
    raise KeyboardInterrupt


def start(command):
    """A child process in a process group of its own, stopped only by this process (``stop_all``): a signal to `make
    run`'s group (Ctrl-C, SIGTERM) reaches this process alone, which stops each child as its program expects. Were
    the children in that group, SIGTERM would reach the Celery worker's pool processes directly, and a worker whose
    pool died under it takes 15 s and more to notice (Ctrl-C did not show it: the pool ignores SIGINT). Sent SIGTERM
    by the kernel if this process dies without stopping it (killed: ``config.serve.dies_with_this_process``)."""
    return subprocess.Popen(
        command,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        preexec_fn=dies_with_this_process(),
        process_group=0,
    )


def wait_any(children: dict) -> str:
    """Block until one child exits; return its name."""
    while True:
        for name, process in children.items():
            if process.poll() is not None:
                return name
        time.sleep(0.3)


def stop_all(children: dict, grace=30, cold=20) -> list[str]:
    """SIGTERM to each (the worker's warm shutdown finishes its current tasks); after ``grace`` seconds SIGQUIT to
    what still runs (the worker's cold shutdown: its unfinished tasks go back to the queue, acknowledged late), and
    SIGKILL to what runs ``cold`` seconds later. Returns the names of the children that had to be killed."""
    for process in children.values():
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
    killed = []
    for signum, wait in ((signal.SIGQUIT, grace), (signal.SIGKILL, cold)):
        deadline = time.monotonic() + wait
        for process in children.values():
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=max(0.1, deadline - time.monotonic()))
        for name, process in children.items():
            if process.poll() is None:
                process.send_signal(signum)
                if signum == signal.SIGKILL:
                    killed.append(name)
    for process in children.values():
        process.wait()
    return killed
