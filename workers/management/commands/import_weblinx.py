"""`python manage.py import_weblinx DIR --project NAME [--user NAME]`: a WebLINX release (the layout the `weblinx`
package reads) into a project, one demonstration per demo, for re-curation (docs/recuration.md)."""

from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management import BaseCommand, CommandError

from annotation.actions import ActionError
from annotation.actions.exports.releases import check_project_for_import, do_import_weblinx
from annotation.models import Project, Role


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
        user = self.user(options["project"], options["user"])
        try:
            project = check_project_for_import(user, options["project"])
            report = do_import_weblinx(options["directory"], project, user, self.progress)
        except ActionError as error:
            problems = "".join(f"\n  {e['field']}: {e['message']}" for e in error.as_dict()["errors"])
            raise CommandError(f"{error.detail}{problems}") from None
        self.stdout.write(
            f"Imported {report.demos} demos ({report.turns} turns, {report.screenshots} screenshots, "
            f"{report.pages} pages) into {project.name!r}"
        )
        for note in report.notes:
            self.stdout.write(f"  note: {note['item']}: {note['note']}")
        for item in report.skipped:
            self.stdout.write(self.style.WARNING(f"  skipped {item['item']}: {item['why']}"))
        if report.skipped:
            self.stdout.write(f"Skipped {len(report.skipped)} items")
        if not report.demos:
            raise CommandError("nothing was imported")

    def progress(self, done: int, total: int) -> None:
        self.stdout.write(f"  {done}/{total} demos")

    def user(self, project_name: str, username: str | None):
        if username is not None:
            user = get_user_model().objects.filter(username=username).first()
            if user is None:
                raise CommandError(f"no user {username!r}")
            return user
        project = Project.objects.filter(name=project_name).first()
        if project is None:
            raise CommandError(f"no project {project_name!r}")
        admin = project.memberships.filter(role=Role.ADMIN).order_by("pk").first() if project else None
        if admin is None:
            raise CommandError(f"project {project_name!r} has no admin; name the importer with --user")
        return admin.user
