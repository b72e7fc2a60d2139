"""`python manage.py run_agent`: run a solver on a split of a project's form tasks, here, and write its scores.

    manage.py run_agent --project P --split test_easy --solver oracle|do-nothing|python:module:Class \\
        --instances N --seed S --out DIR [--metric paper] [--user NAME]

The run is stored like one started through ``POST /api/agent-runs/`` (visible in the API and the web app), but
runs in this process, in its own headless Chromium. DIR gets ``scores.json`` (the evaluation output of
``docs/agents.md`` plus solver, seed and sampled) and ``actions.json`` (the calls per field; the oracle's are the
gold action sequences).
"""

import json
from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management import BaseCommand, CommandError

from annotation.actions import ActionError, do_create_agent_run
from annotation.models import AgentRun, JobStatus, Project
from workers.agents.runs import action_sequences, execute

from ...runners import run_job


class Command(BaseCommand):
    help = "Run a solver (oracle, do-nothing or python:module:Class) on a split of a project's form tasks."

    def add_arguments(self, parser):
        parser.add_argument("--project", required=True)
        parser.add_argument("--split", default="test_easy", help="test_easy, test_hard, subjective_test, train, all.")
        parser.add_argument("--solver", required=True, help="oracle, do-nothing or python:module:Class.")
        parser.add_argument("--instances", type=int, default=None, help="Instances per task (default: all).")
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--metric", choices=("official", "paper"), default="official")
        parser.add_argument("--out", required=True, type=Path, help="Folder for scores.json and actions.json.")
        parser.add_argument("--user", help="The run's owner (default: the first superuser).")

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
            )
        except ActionError as error:
            raise CommandError(error.detail) from error
        self.stderr.write(f"agent run {run.pk}: {run.solver} on {project.name} {run.split}")
        run_job(AgentRun, run.pk, execute)
        run.refresh_from_db()
        if run.status != JobStatus.DONE:
            raise CommandError(f"agent run {run.pk} {run.status}: {run.error}")
        out = options["out"]
        out.mkdir(parents=True, exist_ok=True)
        (out / "scores.json").write_text(json.dumps(run.results, indent=2) + "\n")
        (out / "actions.json").write_text(json.dumps(action_sequences(run), indent=2) + "\n")
        results = run.results
        self.stdout.write(
            f"agent run {run.pk} ({results['metric']} metric): {len(results['instances'])} instances, "
            f"overall {results['overall']}; written to {out / 'scores.json'}"
        )

    def owner(self, username):
        users = get_user_model().objects
        user = users.filter(username=username).first() if username else users.filter(is_superuser=True).first()
        if user is None:
            raise CommandError(f"no user {username!r}" if username else "no superuser: give --user")
        return user
