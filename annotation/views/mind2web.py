"""The Mind2Web pages (session auth): a project's websites, seed tasks and verification counts; proposing tasks;
the reviewers' keyboard-friendly proposal queue. Thin: each view calls ``annotation.actions.mind2web`` and shows a
refused change as a message (a refused request stores nothing); what the user may not see is the 404 or 403 page
(``page_errors``)."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db.models import Q
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from ..actions import ValidationFailed
from ..actions import mind2web as m2w
from ..actions.forms import WORK_ROLES
from ..actions.manage.access import check_project_role
from ..models import READ_ROLES, Project, ProposalRound, Role, Website
from .page_errors import Refusal, action_errors, refusal_kept, refusals_as_messages

MANAGE = (Role.RESEARCHER, Role.ADMIN)
REVIEW = (Role.REVIEWER, Role.ADMIN)
COUNTS = (Role.REVIEWER, Role.RESEARCHER, Role.ADMIN)


def member_project(user, name) -> Project:
    return check_project_role(user, name, READ_ROLES, "see this project")


@login_required
@require_GET
def index(request):
    """The projects with Mind2Web websites (or where you may add them)."""
    collecting = Q(websites__isnull=False) | Q(pk__in=Project.objects.for_user(request.user, MANAGE))
    projects = Project.objects.for_user(request.user).filter(collecting).distinct().order_by("name")
    return render(request, "mind2web/index.html", {"projects": projects})


@login_required
@require_GET
@action_errors
def project_page(request, project):
    """A project's websites (accepted / target, seed tasks), what you may propose, your demonstration tasks, the
    review queue's size and the verification counts, as your role allows."""
    context = project_context(request.user, member_project(request.user, project))
    return render(request, "mind2web/project.html", context)


def project_context(user, project) -> dict:
    """What the project page shows ``user`` (also when a form on it was refused)."""
    role = project.role_of(user)
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
        context["offered"] = m2w.offered_websites(user, project)
        context["demonstrations"] = m2w.assigned_demonstrations(user, project)
        rounds = ProposalRound.objects.filter(proposer=user, website__project=project)
        context["rounds"] = rounds.select_related("website", "assignment")[:50]
    if context["can_review"]:
        context["pending"] = m2w.screening_queue(user, project).count()
    if role in COUNTS:
        context["counts"] = m2w.verification_counts(project)
    return context


@login_required
@require_POST
@action_errors
def website_add(request, project):
    found = m2w.check_project_for_websites(request.user, project)  # 404/403 pages before the post is read
    fields = {key: request.POST.get(key, "") for key in ("name", "url", "domain", "subdomain", "description")}
    if request.POST.get("target_tasks"):
        fields["target_tasks"] = request.POST["target_tasks"]
    with refusal_kept() as refusal:
        website = m2w.do_create_website(found, fields)
    if refusal:  # the page again with what was typed, and the error next to the form
        return refused_form(request, found, refusal, "website", request.POST.dict())
    messages.success(request, f"Website {website.name!r} added.")
    return redirect("mind2web-project", project=project)


def refused_form(request, project, refusal: Refusal, form: str, typed: dict):
    """The project page again with ``form``'s typed values kept and the refusal shown next to it (its status)."""
    context = project_context(request.user, project)
    fields = refusal.fields
    named = "; ".join(f"{field}: {message}" for field, message in fields.items())
    detail = f"{refusal.detail} ({named})" if named and named != refusal.detail else refusal.detail
    context.update(refused={"form": form, "detail": detail, "fields": fields}, typed=typed)
    return render(request, "mind2web/project.html", context, status=refusal.status)


@login_required
@require_POST
@action_errors
def website_import(request, project):
    found = m2w.check_project_for_websites(request.user, project)  # 404/403 pages before the post is read
    with refusal_kept() as refusal:
        upload = request.FILES.get("file")
        if upload is None:
            raise ValidationFailed("choose a file", [{"field": "file", "message": "required"}])
        created = m2w.do_import_websites(found, upload.read(), upload.name or "")
    if refusal:
        return refused_form(request, found, refusal, "import", {})
    messages.success(request, f"{len(created)} websites imported.")
    return redirect("mind2web-project", project=project)


@login_required
@require_POST
@action_errors
def seeds_import(request, website_id):
    """Seed tasks from a file or a text area (one task per line); refused, the project page again with the typed
    tasks kept next to that website's form and the refusal naming the field (its status)."""
    website = m2w.managed_website(request.user, website_id)  # 404/403 pages before the post is read
    typed = request.POST.get("tasks", "")
    upload = request.FILES.get("file")
    with refusal_kept() as refusal:
        if upload is not None:
            texts = m2w.seed_texts_of_file(upload.read(), upload.name or "")
        else:
            texts = [line for line in typed.splitlines() if line.strip()]
        created = m2w.do_add_seed_tasks(website, texts)
    if refusal:
        typed_back = {"tasks": typed, "website": website.pk, "file": upload is not None}
        return refused_form(request, website.project, refusal, "seeds", typed_back)
    messages.success(request, f"{len(created)} seed tasks added to {website.name!r}.")
    return redirect("mind2web-project", project=website.project.name)


@login_required
@require_POST
@action_errors
def round_start(request, website_id):
    """Start (or resume) proposing for a website, then its round page."""
    website = m2w.visible_website(request.user, website_id)
    with refusals_as_messages(request):
        proposal_round = m2w.do_start_round(request.user, website)
        return redirect("mind2web-round", round_id=proposal_round.pk)
    return redirect("mind2web-project", project=website.project.name)


@login_required
@action_errors
def round_page(request, round_id):
    """GET: the seed tasks drawn for the round and the proposal form (up to 5). POST: submit the proposals."""
    proposal_round = m2w.check_round_of(request.user, round_id)
    if request.method == "POST":
        texts = [text for text in request.POST.getlist("task") if text.strip()]
        with refusals_as_messages(request):
            m2w.do_submit_round(request.user, round_id, texts)
            messages.success(request, f"{len(texts)} tasks proposed; a reviewer will look at them.")
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
@action_errors
def screening_queue(request, project):
    """Pending proposals, oldest first, with their screening: accept (editable), reject; j/k, a, e, r keys."""
    found = member_project(request.user, project)
    with refusals_as_messages(request):
        queue = list(m2w.screening_queue(request.user, found)[:200])
        context = {"project": found, "queue": queue, "max_chars": m2w.TASK_MAX_CHARS}
        return render(request, "mind2web/screening.html", context)
    return redirect("mind2web-project", project=project)


@login_required
@require_POST
@action_errors
def proposal_screen(request, proposal_id):
    decision = request.POST.get("decision")
    proposal = m2w.check_proposal_screenable(request.user, proposal_id)
    with refusals_as_messages(request):
        m2w.do_screen(request.user, proposal_id, decision, request.POST.get("text"))
        verb = "accepted" if decision == "accept" else "rejected"
        messages.success(request, f"Proposal {verb}: {proposal.text[:80]}")
    return redirect("mind2web-screening", project=proposal.website.project.name)
