"""`python manage.py replay --project P --task ANNOTATION_ID [--user NAME] [--json FILE]`: replay a recorded
Mind2Web task offline, its requests answered only from its HAR (docs/mind2web.md#replay)."""

import json
from pathlib import Path

from django.core.management import BaseCommand, CommandError

from annotation.actions import ActionError
from annotation.actions.exports.replays import check_replay
from workers.exports.replay.run import replay_demo

from ..releases import importer


class Command(BaseCommand):
    help = (
        "Replay a task recorded in step mode in headless Chromium with the network answered only from its HAR (and "
        "its MHTML snapshots where the HAR lacks a page): each step is performed on the element it targeted and the "
        "next recorded page must be reached. Prints {steps, replayed, first_failure, per_step} and stores it on the "
        "task (the Mind2Web export's quality.json carries it). Exits non-zero when the task cannot be replayed."
    )

    def add_arguments(self, parser):
        parser.add_argument("--project", required=True, help="Project name.")
        parser.add_argument("--task", required=True, help="The task's Mind2Web annotation_id.")
        parser.add_argument(
            "--user", help="Username to act as (a researcher or admin of the project); default: its first admin."
        )
        parser.add_argument("--json", type=Path, help="Also write the result to this file.")

    def handle(self, *args, **options):
        user = importer(options["project"], options["user"])
        try:
            demo = check_replay(user, options["project"], options["task"])
        except ActionError as error:
            raise CommandError(f"{error.status} {error.code}: {error.detail}") from None
        target = options["json"]
        if target and (target.is_dir() or not target.parent.is_dir()):  # said before the replay, not after it
            raise CommandError(f"--json {target}: not a file in an existing folder")
        result = replay_demo(demo)
        text = json.dumps(result, indent=1, ensure_ascii=False)
        if options["json"]:
            options["json"].write_text(text + "\n", encoding="utf-8")
        self.stdout.write(text)
        self.stdout.write(f"Replayed {result['replayed']} of {result['steps']} steps of {options['task']}")
