"""`python manage.py synth_demos`: synthetic WebLINX demonstrations, stored through the real ingest code path.

Blobs, the recording, its turns (in batches) and its end go through ``annotation.actions`` exactly as the API
calls them, so the corpus is validated like a recorder's upload. The same arguments give the same demos (same
client ids): running the command again stores nothing new, as a retried upload would.
"""

import secrets
import time

from django.core.management import BaseCommand, CommandError
from django.core.validators import validate_slug
from django.db import transaction
from django.utils import timezone

from annotation import actions, synth
from annotation.actions.manage import setup
from annotation.models import Project, Role

NAVIGATOR = "synth-navigator"
INSTRUCTOR = "synth-instructor"
BATCH_TURNS = 50  # what the recorder sends per request


def ensure_actors(project_name: str):
    """The project (created if missing) and its synthetic navigator and instructor, both annotators."""
    validate_slug(project_name)
    with transaction.atomic():
        project, _ = setup.do_ensure_project(
            project_name, project_name.title(), "Synthetic demonstrations (synth_demos)."
        )
        people = []
        for username in (NAVIGATOR, INSTRUCTOR):
            user, _ = setup.do_ensure_account(username)  # no password: it cannot sign in
            setup.do_ensure_member(project, user, Role.ANNOTATOR)
            people.append(user)
    return project, *people


def ingest_demo(spec: synth.DemoSpec, navigator, project: Project, instructor=None, batch=BATCH_TURNS):
    """Store one demo as the API does: blobs, start, turns in batches, finish. Returns ``(demo, created, new_blobs)``.

    A demo already stored from the same spec is returned as it is (``created`` False), like a retried recording.
    """
    project = actions.check_project_for_recording(navigator, project.name)
    new_blobs = sum(actions.do_store_blob_bytes(data, kind, project, navigator)[1] for data, kind in spec.blobs)
    demo, created = actions.do_start_recording(
        navigator, project, client_id=spec.client_id, instructor=instructor, **spec.fields
    )
    if demo.project_id != project.pk:
        raise actions.Conflict(f"demo {spec.client_id} already exists in project {demo.project}; use another --seed")
    for start in range(0, len(spec.turns), batch):
        actions.do_ingest_turns(demo, spec.turns[start : start + batch])
    return actions.do_finish_recording(demo, spec.recording_end), created, new_blobs


def summary(demo, created: bool, new_blobs: int, spec: synth.DemoSpec) -> str:
    fields, browser = spec.fields, spec.browser_turns
    return (
        f"{demo.name}{'' if created else ' (already stored)'}: {len(spec.turns)} turns ({browser} browser, "
        f"{len(spec.turns) - browser} chat), {len(spec.blobs)} blobs ({new_blobs} new, {spec.blob_bytes / 1e6:.1f} MB)"
        f" on {', '.join(fields['websites'])} [{fields['category']} / {fields['subcategory']}, {fields['region']}, "
        f"instructor {'sees' if fields['instructor_sees_screen'] else 'does not see'} the screen]"
    )


class Command(BaseCommand):
    help = "Create synthetic WebLINX demonstrations (chat + every browser intent, pages, bboxes, screenshots)."

    def add_arguments(self, parser):
        parser.add_argument("--demos", type=int, default=5, help="Number of demonstrations (default 5).")
        parser.add_argument("--turns", type=int, default=40, help="Turns per demonstration (default 40).")
        parser.add_argument(
            "--elements", type=int, default=300, help=f"Elements per page (default 300, at least {synth.MIN_ELEMENTS})."
        )
        parser.add_argument("--seed", type=int, default=None, help="Random seed (default: a new one, printed).")
        parser.add_argument("--project", default="sample", help="Project name (created if missing; default sample).")
        parser.add_argument(
            "--frames", action="store_true", help="Two other frames per captured action (re-alignment candidates)."
        )
        parser.add_argument(
            "--recent", action="store_true", help="Recorded in the 200 days before yesterday (default: 2024-01-08 on)."
        )

    def handle(self, *, demos, turns, elements, seed, project, frames=False, recent=False, **options):
        if demos < 1 or turns < 1 or elements < synth.MIN_ELEMENTS:
            raise CommandError(f"need --demos >= 1, --turns >= 1 and --elements >= {synth.MIN_ELEMENTS}")
        seed = secrets.randbelow(2**31) if seed is None else seed
        project, navigator, instructor = ensure_actors(project)
        started, totals = time.monotonic(), [0, 0, 0]
        epoch = None
        if recent:  # every recording ended before now; the same seed gives the same demos all day
            epoch = synth.recent_epoch(timezone.now())
        for spec in synth.generate_corpus(demos, turns, elements, seed, frames, epoch):
            try:
                demo, created, new_blobs = ingest_demo(spec, navigator, project, instructor)
            except actions.ActionError as error:
                raise CommandError(f"{error.detail} {error.errors or ''}".strip()) from error
            self.stdout.write(summary(demo, created, new_blobs, spec))
            totals = [totals[0] + len(spec.turns), totals[1] + new_blobs, totals[2] + spec.blob_bytes]
        self.stdout.write(
            f"Total: {demos} demos, {totals[0]} turns, {totals[1]} new blobs ({totals[2] / 1e6:.1f} MB) in project "
            f"{project.name} (seed {seed}) in {time.monotonic() - started:.1f} s"
        )
