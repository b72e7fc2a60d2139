"""Task proposal (Mind2Web's second stage): pick a website under its target, see seed tasks, propose up to five
tasks, screened for near-copies; then the review that accepts (possibly edited) or rejects each proposal.

A round is an assignment of the project's proposal batch (``BatchKind.PROPOSAL``, one task per website), so the
work queue's rules hold: an annotator holds one round per website, a round expires after the batch's allotted
time. An accepted proposal becomes a task of the project's demonstration batch, assigned to its proposer
(Mind2Web's rule) unless the project sends demonstrations to the pool.
"""

import random
import secrets

from django.db import IntegrityError, transaction
from django.db.models import F, Max
from django.utils import timezone
from rapidfuzz import fuzz, process, utils

from ...models import (
    Assignment,
    AssignmentStatus,
    Batch,
    BatchKind,
    Project,
    ProposalRound,
    ProposalStatus,
    ProposedTask,
    Role,
    Task,
    Website,
)
from ..errors import Conflict, Forbidden, NotFound, ValidationFailed
from ..forms import WORK_ROLES, can_work_on
from ..forms.queue import create_assignment, do_accept_task, do_expire, do_submit
from .seeds import check_task_texts

SEEDS_SHOWN = 10
MAX_PROPOSALS = 5
SIMILAR_LISTED = 3
REVIEW_ROLES = (Role.REVIEWER, Role.ADMIN)
BATCH_NAMES = {BatchKind.PROPOSAL: "mind2web-proposals", BatchKind.DEMONSTRATION: "mind2web-demonstrations"}
PROPOSAL_SECONDS = 24 * 3600
PROPOSAL_SLOTS = 1_000_000
DEMONSTRATION_SECONDS = 30 * 24 * 3600  # an assigned demonstration waits for its proposer for a month


def mind2web_batch(project, kind) -> Batch:
    """The project's proposal or demonstration batch, created on first use."""
    proposing = kind == BatchKind.PROPOSAL
    defaults = {
        "html_template": "",
        "allotted_seconds": PROPOSAL_SECONDS if proposing else DEMONSTRATION_SECONDS,
        "description": BatchKind(kind).label,
        # A website's task takes rounds until the website reaches its target, which the proposal code checks.
        "assignments_per_task": PROPOSAL_SLOTS if proposing else 1,
    }
    try:
        batch, _ = Batch.objects.get_or_create(project=project, kind=kind, name=BATCH_NAMES[kind], defaults=defaults)
    except IntegrityError:
        raise Conflict(f"a batch named {BATCH_NAMES[kind]!r} of another kind exists in {project.name!r}") from None
    return batch


# --- Choosing a website -------------------------------------------------------------------------------------


def check_can_propose(user, project) -> None:
    if not project.has_role(user, WORK_ROLES):
        raise Forbidden(f"your role in {project.name!r} cannot propose tasks (needs annotator or admin)")


def offered_websites(user, project):
    """The project's websites still under their target where ``user`` has no submitted round."""
    done = Assignment.objects.filter(worker=user, status=AssignmentStatus.SUBMITTED, proposal_round__isnull=False)
    return (
        Website.objects.filter(project=project)
        .under_target()
        .exclude(pk__in=done.values("proposal_round__website"))
        .order_by("name")
    )


def website_task(website) -> Task:
    """The proposal batch's task of this website."""
    batch = mind2web_batch(website.project, BatchKind.PROPOSAL)
    task, _ = Task.objects.get_or_create(
        batch=batch, index=website.pk, defaults={"inputs": {"website": website.name, "website_id": website.pk}}
    )
    return task


def draw_seeds(website, draw_seed: int) -> list[dict]:
    """``SEEDS_SHOWN`` seed tasks drawn at random with ``draw_seed`` (the same seed draws the same tasks)."""
    seeds = list(website.seed_tasks.order_by("pk").values("id", "text"))
    return random.Random(draw_seed).sample(seeds, min(SEEDS_SHOWN, len(seeds)))


def open_round(user, website):
    return (
        ProposalRound.objects.filter(proposer=user, website=website, assignment__status=AssignmentStatus.ACTIVE)
        .select_related("assignment", "website")
        .first()
    )


def do_start_round(user, website, draw_seed: int | None = None) -> ProposalRound:
    """Start proposing for ``website`` (or resume the open round): 409 when the website reached its target or
    ``user`` already proposed for it."""
    check_can_propose(user, website.project)
    current = open_round(user, website)
    if current is not None and current.assignment.expires_at > timezone.now():
        return current
    if current is not None:
        do_expire(current.assignment_id)
    if not offered_websites(user, website.project).filter(pk=website.pk).exists():
        raise Conflict(f"website {website.name!r} takes no more proposals from you (at target, or already done)")
    task = website_task(website)
    if not can_work_on(user, task.batch):
        raise Forbidden("you are not among the workers of the proposal batch")
    with transaction.atomic():
        assignment = do_accept_task(user, task)
        seed = secrets.randbits(62) if draw_seed is None else draw_seed
        return ProposalRound.objects.create(
            assignment=assignment, website=website, proposer=user, draw_seed=seed, seed_draw=draw_seeds(website, seed)
        )


def check_round_of(user, round_id) -> ProposalRound:
    found = ProposalRound.objects.select_related("assignment", "website__project").filter(pk=round_id).first()
    if found is None or found.proposer_id != user.pk:
        raise NotFound(f"no proposal round {round_id} of yours")
    return found


# --- Screening ----------------------------------------------------------------------------------------------


def references(website) -> list[tuple[str, str]]:
    """``(text, source)`` of what proposals are compared with: the seed tasks and the accepted tasks."""
    seeds = [(text, "seed") for text in website.seed_tasks.values_list("text", flat=True)]
    accepted = website.proposed_tasks.filter(status=ProposalStatus.ACCEPTED).values_list("final_text", flat=True)
    return seeds + [(text, "accepted") for text in accepted]


def near_copies(text: str, known: list[tuple[str, str]], threshold: int) -> list[dict]:
    """The known tasks at least ``threshold`` similar to ``text`` (rapidfuzz token-set ratio, case and punctuation
    ignored), best first: ``[{"text", "score", "source"}]``."""
    choices = [t for t, _ in known]
    found = process.extract(
        text,
        choices,
        scorer=fuzz.token_set_ratio,
        processor=utils.default_process,
        score_cutoff=threshold,
        limit=SIMILAR_LISTED,
    )
    return [{"text": choice, "score": round(score, 1), "source": known[index][1]} for choice, score, index in found]


def do_submit_round(user, round_id, texts) -> list[ProposedTask]:
    """Submit up to ``MAX_PROPOSALS`` tasks (400 naming the field for more, empty or over-long), each screened."""
    proposal_round = check_round_of(user, round_id)
    texts = check_task_texts(texts, "tasks", MAX_PROPOSALS)
    website = proposal_round.website
    threshold = website.project.proposal_similarity_threshold
    with transaction.atomic():
        do_submit(proposal_round.assignment_id, {"tasks": texts})
        known = references(website)
        proposals = [
            ProposedTask(
                round=proposal_round,
                website=website,
                proposer=user,
                text=t,
                similar_to=near_copies(t, known, threshold),
            )
            for t in texts
        ]
        ProposalRound.objects.filter(pk=proposal_round.pk).update(submitted_at=timezone.now())
        return ProposedTask.objects.bulk_create(proposals)


# --- Review -------------------------------------------------------------------------------------------------


def screening_queue(user, project):
    """Pending proposals of ``project`` for a reviewer, oldest first; ``user``'s own are left out."""
    check_can_screen(user, project)
    return (
        ProposedTask.objects.filter(website__project=project, status=ProposalStatus.PENDING)
        .exclude(proposer=user)
        .select_related("website", "proposer", "round")
        .order_by("created_at", "pk")
    )


def check_can_screen(user, project) -> None:
    if not project.has_role(user, REVIEW_ROLES):
        raise Forbidden(f"your role in {project.name!r} cannot screen proposals (needs reviewer or admin)")


def check_proposal_screenable(user, proposal_id) -> ProposedTask:
    projects = Project.objects.for_user(user)
    proposal = (
        ProposedTask.objects.select_related("website__project", "proposer")
        .filter(pk=proposal_id, website__project__in=projects)
        .first()
    )
    if proposal is None:
        raise NotFound(f"no proposal {proposal_id} among your projects")
    check_can_screen(user, proposal.website.project)
    if proposal.proposer_id == user.pk:
        raise Forbidden("you proposed this task: another reviewer must review it")
    return proposal


def do_screen(user, proposal_id, decision, text=None) -> ProposedTask:
    """``accept`` (with ``text`` when the reviewer edited it) or ``reject`` a pending proposal; 409 when it was
    reviewed already. Accepting makes the demonstration task."""
    if decision not in ("accept", "reject"):
        raise ValidationFailed(
            "decision must be accept or reject", [{"field": "decision", "message": "accept, reject"}]
        )
    proposal = check_proposal_screenable(user, proposal_id)
    final = check_task_texts([proposal.text if text in (None, "") else text], "text")[0]
    with transaction.atomic():
        locked = ProposedTask.objects.select_for_update().get(pk=proposal.pk)
        if locked.status != ProposalStatus.PENDING:
            raise Conflict(f"proposal {proposal.pk} was already {locked.status}")
        locked.reviewer, locked.reviewed_at = user, timezone.now()
        locked.status = ProposalStatus.ACCEPTED if decision == "accept" else ProposalStatus.REJECTED
        if decision == "accept":
            locked.final_text = final
            locked.demo_task = make_demonstration_task(locked)
        locked.save()
        return locked


def make_demonstration_task(proposal) -> Task:
    """The demonstration batch's task of an accepted proposal, assigned to its proposer unless the project sends
    demonstrations to the pool."""
    website, project = proposal.website, proposal.website.project
    # The batch row's lock makes reviewers accepting at once take the next index one after the other.
    batch = Batch.objects.select_for_update().get(pk=mind2web_batch(project, BatchKind.DEMONSTRATION).pk)
    last = batch.tasks.aggregate(last=Max("index"))["last"]
    index = 0 if last is None else last + 1
    inputs = {
        "task": proposal.final_text,
        "website": website.name,
        "url": website.url,
        "domain": website.domain,
        "subdomain": website.subdomain,
        "proposal": proposal.pk,
    }
    task = Task.objects.create(batch=batch, index=index, inputs=inputs)
    Batch.objects.filter(pk=batch.pk).update(tasks_total=F("tasks_total") + 1, completed=False)
    if not project.demonstrations_to_pool:
        create_assignment(task, proposal.proposer, timezone.now())
    return task
