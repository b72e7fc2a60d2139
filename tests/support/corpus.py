"""A synthetic corpus stored in the test database through the real ingest path, for export and review tests."""

from annotation import synth
from annotation.models import Demonstration, DemoStatus
from workers.management.commands.synth_demos import ensure_actors, ingest_demo


def ingest_corpus(project="corpus", demos=3, turns=24, elements=60, seed=7, status=DemoStatus.VALIDATED):
    """Store ``demos`` synthetic demonstrations in ``project`` (created if missing) and give them ``status``.

    Returns the demonstrations ordered by name. ``synth`` varies websites, categories, subcategories, regions and
    ``instructor_sees_screen`` across demos, and a demo of 20 or more turns has every intent.
    """
    project_row, navigator, instructor = ensure_actors(project)
    names = []
    for spec in synth.generate_corpus(demos, turns, elements, seed=seed):
        demo, _, _ = ingest_demo(spec, navigator, project_row, instructor)
        names.append(demo.name)
    Demonstration.objects.filter(name__in=names).update(status=status)
    return list(Demonstration.objects.filter(name__in=names).order_by("name"))
