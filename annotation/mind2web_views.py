"""The Mind2Web pages (session auth): a project's websites, seed tasks and verification counts; proposing tasks;
the reviewers' keyboard-friendly proposal queue. Thin: each view calls ``annotation.actions.mind2web`` and shows
refusals as messages (a refused request stores nothing)."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from .actions import ActionError, Forbidden, NotFound, ValidationFailed
from .actions import mind2web as m2w
from .actions.projects import check_project_role
from .actions.work import WORK_ROLES
from .models import READ_ROLES, Project, ProposalRound, ProposedTask, Role, Website

MANAGE = (Role.RESEARCHER, Role.ADMIN)
REVIEW = (Role.REVIEWER, Role.ADMIN)
COUNTS = (Role.REVIEWER, Role.RESEARCHER, Role.ADMIN)


def member_project(user, name) -> Project:
    try:
        return check_project_role(user, name, READ_ROLES, "see this project")
    except NotFound as error:
        raise Http404(error.detail) from error


def refused(request, error: ActionError) -> None:
    fields = "; ".join(f"{e['field']}: {e['message']}" for e in error.errors[:5])
    messages.error(request, f"{error.detail}" + (f" ({fields})" if fields and fields not in error.detail else ""))


@login_required
@require_GET
def index(request):
    """The projects with Mind2Web websites (or where you may add them)."""
    projects = Project.objects.for_user(request.user).order_by("name")
    return render(request, "mind2web/index.html", {"projects": projects})


@login_required
@require_GET
def project_page(request, project):
    """A project's websites (accepted / target, seed tasks), what you may propose, your demonstration tasks, the
    review queue's size and the verification counts, as your role allows."""
    project = member_project(request.user, project)
    role = project.role_of(request.user)
    websites = Website.objects.filter(project=project).with_counts().order_by("name")
    context = {
        "project": project,
        "role": role,
        "websites": websites,
        "can_manage": role in MANAGE,
        "can_propose": role in WORK_ROLES,
        "can_review": role in REVIEW,
    }
    if context["can_propose"]:
        context["offered"] = m2w.offered_websites(request.user, project)
        context["demonstrations"] = m2w.assigned_demonstrations(request.user, project)
        rounds = ProposalRound.objects.filter(proposer=request.user, website__project=project)
        context["rounds"] = rounds.select_related("website", "assignment")[:50]
    if context["can_review"]:
        context["pending"] = m2w.review_queue(request.user, project).count()
    if role in COUNTS:
        context["counts"] = m2w.verification_counts(project)
    return render(request, "mind2web/project.html", context)


def managed_project(user, name) -> Project:
    """The project whose websites ``user`` manages: the 404 page for another project, the 403 page for a member
    whose role does not manage websites (what they post is never read)."""
    try:
        return m2w.check_project_for_websites(user, name)
    except NotFound as error:
        raise Http404(error.detail) from error
    except Forbidden as error:
        raise PermissionDenied(error.detail) from error


@login_required
@require_POST
def website_add(request, project):
    found = managed_project(request.user, project)
    try:
        fields = {key: request.POST.get(key, "") for key in ("name", "url", "domain", "subdomain", "description")}
        if request.POST.get("target_tasks"):
            fields["target_tasks"] = request.POST["target_tasks"]
        website = m2w.do_create_website(found, fields)
        messages.success(request, f"Website {website.name!r} added.")
    except ActionError as error:
        refused(request, error)
    return redirect("mind2web-project", project=project)


@login_required
@require_POST
def website_import(request, project):
    found = managed_project(request.user, project)
    try:
        upload = request.FILES.get("file")
        if upload is None:
            raise ValidationFailed("choose a file", [{"field": "file", "message": "required"}])
        created = m2w.do_import_websites(found, upload.read(), upload.name or "")
        messages.success(request, f"{len(created)} websites imported.")
    except ActionError as error:
        refused(request, error)
    return redirect("mind2web-project", project=project)


@login_required
@require_POST
def seeds_import(request, website_id):
    """Seed tasks from a file or a text area (one task per line)."""
    try:
        website = m2w.managed_website(request.user, website_id)
        upload = request.FILES.get("file")
        if upload is not None:
            texts = m2w.seed_texts_of_file(upload.read(), upload.name or "")
        else:
            texts = [line for line in request.POST.get("tasks", "").splitlines() if line.strip()]
        created = m2w.do_add_seed_tasks(website, texts)
        messages.success(request, f"{len(created)} seed tasks added to {website.name!r}.")
    except ActionError as error:
        refused(request, error)
        website = Website.objects.filter(pk=website_id).select_related("project").first()
        if website is None or not website.project.has_role(request.user, READ_ROLES):
            raise Http404("no such website") from None
    return redirect("mind2web-project", project=website.project.name)


@login_required
@require_POST
def round_start(request, website_id):
    """Start (or resume) proposing for a website, then its round page."""
    try:
        website = m2w.visible_website(request.user, website_id)
        proposal_round = m2w.do_start_round(request.user, website)
    except NotFound as error:
        raise Http404(error.detail) from error
    except ActionError as error:
        refused(request, error)
        return redirect("mind2web-project", project=website.project.name)
    return redirect("mind2web-round", round_id=proposal_round.pk)


@login_required
def round_page(request, round_id):
    """GET: the seed tasks drawn for the round and the proposal form (up to 5). POST: submit the proposals."""
    try:
        proposal_round = m2w.check_round_of(request.user, round_id)
    except NotFound as error:
        raise Http404(error.detail) from error
    if request.method == "POST":
        texts = [text for text in request.POST.getlist("task") if text.strip()]
        try:
            m2w.do_submit_round(request.user, round_id, texts)
            messages.success(request, f"{len(texts)} tasks proposed; a reviewer will look at them.")
        except ActionError as error:
            refused(request, error)
        return redirect("mind2web-round", round_id=round_id)
    context = {
        "round": proposal_round,
        "website": proposal_round.website,
        "proposals": proposal_round.proposals.all(),
        "slots": range(m2w.MAX_PROPOSALS),
        "max_chars": m2w.TASK_MAX_CHARS,
    }
    return render(request, "mind2web/round.html", context)


@login_required
@require_GET
def review_queue(request, project):
    """Pending proposals, oldest first, with their screening: accept (editable), reject; j/k, a, e, r keys."""
    found = member_project(request.user, project)
    try:
        queue = list(m2w.review_queue(request.user, found)[:200])
    except ActionError as error:
        refused(request, error)
        return redirect("mind2web-project", project=project)
    return render(request, "mind2web/review.html", {"project": found, "queue": queue, "max_chars": m2w.TASK_MAX_CHARS})


@login_required
@require_POST
def proposal_review(request, proposal_id):
    decision = request.POST.get("decision")
    try:
        proposal = m2w.check_proposal_reviewable(request.user, proposal_id)
        m2w.do_review(request.user, proposal_id, decision, request.POST.get("text"))
        verb = "accepted" if decision == "accept" else "rejected"
        messages.success(request, f"Proposal {verb}: {proposal.text[:80]}")
    except NotFound as error:
        raise Http404(error.detail) from error
    except ActionError as error:
        refused(request, error)
        proposal = ProposedTask.objects.select_related("website__project").get(pk=proposal_id)
    return redirect("mind2web-review", project=proposal.website.project.name)
