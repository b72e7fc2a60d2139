"""`python manage.py import_mind2web FILE… --project NAME [--user NAME]`: Mind2Web split files (train.json,
test_task.json...) into a project, one demonstration per task, for re-curation (docs/recuration.md)."""

from pathlib import Path

from django.core.management import BaseCommand

from annotation.actions.exports.mind2web_releases import do_import_mind2web

from ..releases import run_import


class Command(BaseCommand):
    help = (
        "Import Mind2Web split files (each a JSON list of task records, named train.json, test_task.json, "
        "test_website.json, test_domain.json or <split>_N.json) into an existing project; the raw dump's MHTML "
        "snapshots are read from task/<annotation_id>/processed/snapshots/ beside the files. Every task is checked "
        "first; each is then written in its own transaction. Tasks that fail their checks, or are in the project "
        "already, are listed and skipped. Exits non-zero when nothing was imported."
    )

    def add_arguments(self, parser):
        parser.add_argument("files", type=Path, nargs="+", metavar="FILE", help="The release's split files.")
        parser.add_argument("--project", required=True, help="Project name (must exist).")
        parser.add_argument(
            "--user",
            help="Username the tasks are imported by (a researcher or admin of the project); "
            "default: the project's first admin.",
        )

    def handle(self, *args, **options):
        run_import(
            self,
            options,
            lambda project, user, progress: do_import_mind2web(options["files"], project, user, progress),
            "tasks",
        )
