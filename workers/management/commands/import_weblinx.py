"""`python manage.py import_weblinx DIR --project NAME [--user NAME]`: a WebLINX release (the layout the `weblinx`
package reads) into a project, one demonstration per demo, for re-curation (docs/recuration.md)."""

from pathlib import Path

from django.core.management import BaseCommand

from annotation.actions.exports.releases import do_import_weblinx

from ..releases import run_import


class Command(BaseCommand):
    help = (
        "Import a WebLINX release (splits.json and demonstrations/<demo>/ with replay.json, metadata.json, form.json, "
        "pages/, bboxes/, screenshots/) into an existing project. Every demo is checked first; each is then written "
        "in its own transaction. Demos that fail their checks, or are in the project already, are listed and "
        "skipped. Exits non-zero when nothing was imported."
    )

    def add_arguments(self, parser):
        parser.add_argument("directory", type=Path, metavar="DIR", help="The release's folder (holding splits.json).")
        parser.add_argument("--project", required=True, help="Project name (must exist).")
        parser.add_argument(
            "--user",
            help="Username the demos are recorded as imported by (a researcher or admin of the project); "
            "default: the project's first admin.",
        )

    def handle(self, *args, **options):
        run_import(
            self,
            options,
            lambda project, user, progress: do_import_weblinx(options["directory"], project, user, progress),
        )
