"""Mind2Web verification counts per project (the paper reports them: 61 of 2,411 tasks discarded, 390
descriptions refined, 187 tasks with steps discarded). The checks themselves are review metadata edits
(``discarded``, ``refined_task``) and turn deletions, made on the review page."""

from django.db.models import Count, Exists, OuterRef, Q

from ...models import Demonstration, TurnCuration


def verification_counts(project) -> dict:
    """``{"tasks", "discarded", "refined", "with_steps_discarded"}`` over the project's demonstrations."""
    deleted = TurnCuration.objects.filter(demonstration=OuterRef("pk"), deleted=True)
    return Demonstration.objects.filter(project=project).aggregate(
        tasks=Count("pk"),
        discarded=Count("pk", filter=Q(discarded=True)),
        refined=Count("pk", filter=~Q(refined_task="")),
        with_steps_discarded=Count("pk", filter=Q(Exists(deleted))),
    )
