"""What the two release-import commands (`import_weblinx`, `import_mind2web`) share: the importing user, running
the import and printing its report (docs/recuration.md)."""

from django.contrib.auth import get_user_model
from django.core.management import CommandError

from annotation.actions import ActionError
from annotation.actions.exports.releases import check_project_for_import
from annotation.models import Project, Role


def importer(project_name: str, username: str | None):
    """The user named, else the project's first admin; ``CommandError`` when there is none."""
    if username is not None:
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"no user {username!r}")
        return user
    project = Project.objects.filter(name=project_name).first()
    if project is None:
        raise CommandError(f"no project {project_name!r}")
    admin = project.memberships.filter(role=Role.ADMIN).order_by("pk").first()
    if admin is None:
        raise CommandError(f"project {project_name!r} has no admin; name the importer with --user")
    return admin.user


def run_import(command, options: dict, do_import, items: str = "demos") -> None:
    """``do_import(project, user, progress)`` as the importing user, its report printed; non-zero exit (a
    ``CommandError``) when refused or when nothing was imported."""
    user = importer(options["project"], options["user"])

    def progress(done: int, total: int) -> None:
        command.stdout.write(f"  {done}/{total} {items}")

    try:
        project = check_project_for_import(user, options["project"])
        report = do_import(project, user, progress)
    except ActionError as error:
        problems = "".join(f"\n  {e['field']}: {e['message']}" for e in error.as_dict()["errors"])
        raise CommandError(f"{error.detail}{problems}") from None
    captures = f", {report.screenshots} screenshots" if items == "demos" else ""
    command.stdout.write(
        f"Imported {report.demos} {items} ({report.turns} {'turns' if items == 'demos' else 'actions'}{captures}, "
        f"{report.pages} pages) into {project.name!r}"
    )
    for note in report.notes:
        command.stdout.write(f"  note: {note['item']}: {note['note']}")
    for item in report.skipped:
        command.stdout.write(command.style.WARNING(f"  skipped {item['item']}: {item['why']}"))
    if report.skipped:
        command.stdout.write(f"Skipped {len(report.skipped)} items")
    if not report.demos:
        raise CommandError("nothing was imported")
