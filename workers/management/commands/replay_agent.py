"""`python manage.py replay_agent --project P [--task ID ...] --solver oracle|do-nothing|python:module:Class
[--user U] [--out FILE]`: run a solver on replayed Mind2Web tasks and score it with Mind2Web's metrics
(docs/mind2web.md#replayed-tasks-as-an-agent-environment)."""

import json
from pathlib import Path

from django.core.management import BaseCommand, CommandError

from annotation.actions import ActionError
from annotation.actions.exports.replays import check_replay, check_replay_project, task_id
from workers.exports.replay.agent import load_solver, run_agent
from workers.exports.replay.env import load_task

from ..releases import importer


class Command(BaseCommand):
    help = (
        "Run a solver on recorded Mind2Web tasks replayed offline from their HAR (teacher-forced: each step starts "
        "from the recorded page) and write Mind2Web's scores (element accuracy, operation F1, step and task success, "
        "per step, per task and macro-averaged) as manage.py evaluate --format mind2web does. Tasks without traffic "
        "are skipped, saying why."
    )

    def add_arguments(self, parser):
        parser.add_argument("--project", required=True, help="Project name.")
        parser.add_argument("--task", nargs="+", help="Mind2Web annotation_ids; default: every task of the project.")
        parser.add_argument("--solver", required=True, help="oracle, do-nothing or python:module:Class.")
        parser.add_argument("--user", help="Username to act as (a researcher or admin); default: its first admin.")
        parser.add_argument("--out", type=Path, help="Also write the scores (JSON) to this file.")

    def handle(self, *args, **options):
        try:
            solver = load_solver(options["solver"])
        except ValueError as error:
            raise CommandError(str(error)) from None
        user = importer(options["project"], options["user"])
        try:
            project = check_replay_project(user, options["project"])
            wanted = options["task"] or [task_id(d) for d in project.demonstrations.order_by("pk")]
            demos, skipped = [], []
            for annotation_id in wanted:
                try:
                    demos.append(check_replay(user, options["project"], annotation_id))
                except ActionError as error:
                    if error.status != 409 or len(wanted) == 1:
                        raise
                    skipped.append({"task": annotation_id, "why": error.detail})
        except ActionError as error:
            raise CommandError(f"{error.status} {error.code}: {error.detail}") from None
        if not demos:
            raise CommandError("409 conflict: no task of the project has recorded traffic (HAR) to replay")
        result = {"format": "mind2web", **run_agent([load_task(demo) for demo in demos], solver), "skipped": skipped}
        text = json.dumps(result, indent=2, ensure_ascii=False)
        if options["out"]:
            options["out"].write_text(text + "\n", encoding="utf-8")
        for item in skipped:
            self.stdout.write(f"Skipped {item['task']}: {item['why']}")
        aggregate = result["aggregate"]
        self.stdout.write(
            f"{result['solver']} on {aggregate['tasks']} tasks ({aggregate['steps']} steps): "
            + ", ".join(f"{k} {aggregate[k]}" for k in ("element_accuracy", "operation_f1", "step_success_rate"))
            + f", task_success_rate {aggregate['task_success_rate']}"
        )
