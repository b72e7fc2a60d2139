"""`python manage.py pack_blobs`: write the blob packs of finished demos on S3 (``workers/exports/packs.py``), as
the worker does after each recording; for demos recorded before packs existed, or to renew them."""

from django.core.files.storage import default_storage
from django.core.management import BaseCommand, CommandError

from annotation.models import Demonstration, DemoStatus, Project
from annotation.store.blobstore import S3ObjectReader, is_s3
from workers.exports.packs import pack_demo


class Command(BaseCommand):
    help = "Pack each finished demo's blobs into one S3 object that exports read with one GET (S3 storage only)."

    def add_arguments(self, parser):
        parser.add_argument("--project", help="Project name (default: every project).")

    def handle(self, *args, project=None, **options):
        if not is_s3(default_storage):
            raise CommandError("blob packs are for S3 storage (AWS_STORAGE_BUCKET_NAME); local blobs need none")
        demos = Demonstration.objects.exclude(status=DemoStatus.RECORDING).order_by("pk")
        if project is not None:
            if not Project.objects.filter(name=project).exists():
                raise CommandError(f"no project named {project!r}")
            demos = demos.filter(project__name=project)
        reader, packed, blobs = S3ObjectReader(default_storage), 0, 0
        for demo in demos.iterator():
            blobs += pack_demo(demo, reader)
            packed += 1
        self.stdout.write(f"packed {blobs} blobs of {packed} demos")
