"""`python manage.py import_turkingbench --project NAME [--assignments N] [--splits DIR] DIR...`: TurkingBench task
directories (``template.html`` + ``batch.csv``) as form batches, one per directory, named after it."""

import re
import time
from dataclasses import replace
from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management import BaseCommand, CommandError
from django.db import transaction

from agents import vendor
from annotation.actions import ActionError
from annotation.actions.forms import (
    BatchSettings,
    do_create_form_batches,
    do_store_split_lists,
    read_split_lists,
    read_task_dir,
    warnings_for,
)
from annotation.actions.manage import setup

SLUG = re.compile(r"^[-a-zA-Z0-9_]{1,64}$")


class Command(BaseCommand):
    help = (
        "Import TurkingBench task directories as form batches: one batch per DIR (named after it), one task per "
        "distinct instance of batch.csv (all non-Answer columns), Answer.* rows as the task's gold answers. "
        "Every directory is checked before anything is stored; one bad directory stores nothing."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "dirs", nargs="+", type=Path, metavar="DIR", help="A task directory (template.html + batch.csv)."
        )
        parser.add_argument("--project", required=True, help="Project name (created if it does not exist).")
        parser.add_argument("--assignments", type=int, default=1, help="Assignments per task (default 1).")
        parser.add_argument(
            "--allotted-seconds", type=int, default=24 * 3600, help="Time per assignment (default 24 h)."
        )
        parser.add_argument("--splits", type=Path, help="TurkingBench's splits/ folder: keep its lists in the project.")
        parser.add_argument("--unpublished", action="store_true", help="Import without handing out work yet.")
        parser.add_argument("--user", help="Username recorded as the batches' creator.")

    def handle(self, *args, **options):
        started = time.monotonic()
        if not SLUG.match(options["project"]):
            raise CommandError(f"project name {options['project']!r} must be a slug (letters, digits, - and _)")
        settings = BatchSettings(
            assignments_per_task=options["assignments"],
            allotted_seconds=options["allotted_seconds"],
            published=not options["unpublished"],
        )
        user = self.user(options["user"])
        try:
            settings.check()
            parsed = [(path, read_task_dir(path)) for path in self.directories(options["dirs"])]
            lists = read_split_lists(options["splits"]) if options["splits"] else None
            with transaction.atomic():
                project, created = setup.do_ensure_project(options["project"])
                items = [(path.name, batch, replace(settings, source_name=path.name)) for path, batch in parsed]
                batches = do_create_form_batches(user, project, items)
                if lists is not None:
                    do_store_split_lists(project, lists)
        except ActionError as error:
            raise CommandError(f"{error.detail}; nothing was imported") from None
        rows = sum(batch.rows for _, batch in parsed)
        tasks = sum(len(batch.tasks) for _, batch in parsed)
        if created:
            self.stdout.write(f"Created project {project.name!r}")
        for path, batch in parsed:
            self.stdout.write(f"  {path.name}: {len(batch.tasks)} tasks, {batch.rows} rows")
            assets = vendor.external_assets(batch.template)
            if assets:
                local = [a["local"].split("/")[0] for a in assets if a["local"]]
                served = f": {', '.join(dict.fromkeys(local))}" if local else ""
                self.stdout.write(
                    f"    external scripts and styles: {len(assets)}, {len(local)} served locally{served}"
                )
            for note in warnings_for(batch):
                self.stdout.write(self.style.WARNING(f"    warning: {note}"))
        self.stdout.write(
            self.style.SUCCESS(
                f"Imported {len(batches)} batches ({tasks} tasks from {rows} rows) into {project.name!r} in "
                f"{time.monotonic() - started:.1f}s"
            )
        )
        if lists is not None:
            self.stdout.write(f"Split lists: {', '.join(f'{k} ({len(v)})' for k, v in lists.items()) or 'none'}")

    def directories(self, dirs):
        paths = [path.resolve() for path in dirs]
        names = [path.name for path in paths]
        twice = sorted({name for name in names if names.count(name) > 1})
        if twice:
            raise CommandError(f"two directories are named {', '.join(twice)}; batch names must differ")
        return paths

    def user(self, username):
        if username is None:
            return None
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"no user {username!r}")
        return user
