"""`python manage.py export_dataset`: write a benchmark export directory (the same code the export jobs run)."""

import itertools
import shutil
import time
from pathlib import Path

from django.core.management import BaseCommand, CommandError

from annotation.models import EXPORTABLE_STATUSES, Project
from workers.exports import dataset
from workers.exports.exporters import get_exporter
from workers.exports.jobs import export_with_quality


class Command(BaseCommand):
    help = (
        "Export demonstrations as a WebLINX directory (DIR/splits.json, DIR/demonstrations/<name>/...) or as "
        "Mind2Web split files (DIR/train.json, test_task.json, test_website.json, test_domain.json), both with the "
        "quality report DIR/quality.json, or a project's "
        "form batches as TurkingBench tasks (DIR/tasks/<batch>/template.html + batch.csv, DIR/splits/*.txt)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--format", required=True, choices=["weblinx", "mind2web", "turkingbench"])
        parser.add_argument("--out", required=True, type=Path, help="Output directory (must be new or empty).")
        parser.add_argument("--project", help="Project name (default: every project).")
        parser.add_argument(
            "--status",
            choices=["validated", "all"],
            default="validated",
            help=(
                "validated (default), or all: every status but recording (recorded, in review, returned, validated, "
                "rejected); rejected demos are marked invalid in WebLINX and left out of Mind2Web."
            ),
        )
        parser.add_argument("--overwrite", action="store_true", help="Replace a non-empty output directory.")
        parser.add_argument(
            "--gold",
            action="store_true",
            help="turkingbench: also write the imported gold rows (Answer.* of batch.csv).",
        )
        parser.add_argument(
            "--exact-cells",
            action="store_true",
            help="turkingbench: write batch.csv cells verbatim, as TurkingBench's tools read them (default: a cell "
            "beginning with = + - @ gets a leading ', safe in a spreadsheet).",
        )

    def handle(self, *args, **options):
        out, export_format = options["out"], options["format"]
        if export_format == "turkingbench":
            return self.export_turkingbench(options)
        self.prepare(out, options["overwrite"])
        projects = self.projects(options["project"])
        statuses = EXPORTABLE_STATUSES if options["status"] == "all" else dataset.DEFAULT_STATUSES
        demos = itertools.chain.from_iterable(dataset.export_demos(p, export_format, statuses) for p in projects)
        started = time.monotonic()
        exporter, label = get_exporter(export_format), ",".join(project.name for project in projects)
        with dataset.storage_blobs() as blobs:
            counts = export_with_quality(exporter, demos, out, blobs, self.report_progress, label)
        self.stdout.write(
            self.style.SUCCESS(
                f"Exported {counts['demos']} demonstrations ({counts['turns']} turns) as {export_format} to {out} "
                f"(with quality.json) in {time.monotonic() - started:.1f}s"
            )
        )
        for split, numbers in sorted(counts["per_split"].items()):
            self.stdout.write(f"  {split:<13} {numbers['demos']:>6} demos {numbers['turns']:>8} turns")

    def export_turkingbench(self, options) -> None:
        from workers.exports import form_dataset, form_quality
        from workers.exports.exporters import turkingbench

        if not options["project"]:
            raise CommandError("--format turkingbench needs --project (batch names are unique per project)")
        project = self.projects(options["project"])[0]
        self.prepare(options["out"], options["overwrite"])
        started = time.monotonic()
        batches = form_dataset.export_batches(project, include_gold=options["gold"])
        lists = form_dataset.split_lists(project)
        counts = turkingbench.export(batches, options["out"], lists, exact=options["exact_cells"])
        exported = form_dataset.selected_batches(project)
        form_quality.write_form_quality(project, exported, options["out"], options["gold"])  # quality.json
        self.stdout.write(
            self.style.SUCCESS(
                f"Exported {counts['batches']} batches ({counts['rows']} rows) as turkingbench to {options['out']} "
                f"in {time.monotonic() - started:.1f}s"
            )
        )

    def prepare(self, out: Path, overwrite: bool) -> None:
        if out.exists() and any(out.iterdir()):
            if not overwrite:
                raise CommandError(f"{out} is not empty; choose a new directory or pass --overwrite")
            shutil.rmtree(out)
        out.mkdir(parents=True, exist_ok=True)

    def projects(self, name):
        if name is None:
            return list(Project.objects.all())
        project = Project.objects.filter(name=name).first()
        if project is None:
            known = ", ".join(Project.objects.values_list("name", flat=True)) or "none"
            raise CommandError(f"no project {name!r} (projects: {known})")
        return [project]

    def report_progress(self, done: int) -> None:
        if done % 10 == 0:
            self.stdout.write(f"  {done} demonstrations written ...")
