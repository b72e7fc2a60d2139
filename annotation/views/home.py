"""Server-rendered pages. Thin: they read through querysets and render."""

from django.db import connection
from django.db.models import Count, Q
from django.http import JsonResponse
from django.shortcuts import redirect, render
from django.templatetags.static import static
from django.urls import reverse
from django.utils import timezone

from ..actions import forms, live
from ..actions.review import EDITABLE_STATUSES, VIEW_ALL_ROLES
from ..models import (
    Assignment,
    AssignmentStatus,
    Batch,
    BatchKind,
    DemoMode,
    Demonstration,
    DemoReview,
    DemoStatus,
    ExportJob,
    Membership,
    Project,
    Role,
)

HOME_LIMIT = 10  # rows per block: the home page points onwards, the lists behind the links are complete
REVIEW_ROLES = (Role.REVIEWER, Role.ADMIN)
RESEARCH_ROLES = (Role.RESEARCHER, Role.ADMIN)
RECORD_ROLES = (Role.ANNOTATOR, Role.ADMIN)


def home(request):
    """The landing page: your projects, then one block per role you hold, each linking to what to do next."""
    if not request.user.is_authenticated:
        return render(request, "home.html", {})
    return render(request, "home.html", home_context(request, request.user))


def project_roles(user) -> dict:
    """``{project id: role}`` for ``user``; admin of every project for a superuser. One query."""
    if user.is_superuser:
        return dict.fromkeys(Project.objects.values_list("pk", flat=True), Role.ADMIN)
    return dict(Membership.objects.filter(user=user).values_list("project_id", "role"))


def projects_with(roles: dict, wanted) -> list:
    return [pk for pk, role in roles.items() if role in wanted]


def demo_link(demo, user, roles: dict) -> str | None:
    """The page ``user`` may open for ``demo``, decided from the roles already read (no query), by the same
    rules as ``review.reviewable_demos`` and ``live.session_role``: a recording's session page for its
    navigator, instructor or a project admin; otherwise its review page where the user reads every demo of the
    project or took part in this one."""
    role = roles.get(demo.project_id)
    if role is None:  # both pages need a role in the project, whoever took part
        return None
    takes_part = user.pk in (demo.navigator_id, demo.instructor_id)
    if demo.status == DemoStatus.RECORDING:
        if user.pk == demo.navigator_id:
            return reverse("live-navigate", args=[demo.name])
        if takes_part or role == Role.ADMIN:
            return reverse("live-instruct", args=[demo.name])
        return None
    if role in VIEW_ALL_ROLES or (role == Role.ANNOTATOR and takes_part):
        return reverse("review-demo", args=[demo.name])
    return None


def linked(demos, user, roles: dict) -> list:
    """The demos with ``link`` set to the page the user may open (or None)."""
    demos = list(demos)
    for demo in demos:
        demo.link = demo_link(demo, user, roles)
    return demos


def recording_blocks(request, user, roles: dict) -> dict:
    """The annotator's demos being recorded (with the invitation for chat mode), those they instruct, and
    those returned to them with the reviewers' comment count."""
    visible = Demonstration.objects.visible_to(user).select_related("project")
    navigating = list(visible.filter(status=DemoStatus.RECORDING, navigator=user)[:HOME_LIMIT])
    invitations = live.do_issue_invitations(user, [demo for demo in navigating if demo.mode == DemoMode.CHAT])
    for demo in navigating:
        if demo.pk in invitations:
            demo.invitation = invitations[demo.pk]
            demo.invite_url = request.build_absolute_uri(reverse("live-join", args=[demo.invitation.code]))
    instructing = visible.filter(status=DemoStatus.RECORDING, instructor=user).exclude(navigator=user)
    instructing = instructing.select_related("navigator")
    returned = (
        visible.filter(Q(navigator=user) | Q(instructor=user), status=DemoStatus.RETURNED)
        .annotate(comment_count=Count("comments"))
        .order_by("-updated_at")
    )
    return {
        "navigating": linked(navigating, user, roles),
        "instructing": linked(instructing[:HOME_LIMIT], user, roles),
        "returned": linked(returned[:HOME_LIMIT], user, roles),
    }


def queue_counts(projects: list) -> list:
    """``[(project name, [(status, label, count), ...]), ...]`` for the review queue; two queries."""
    names = dict(Project.objects.filter(pk__in=projects).values_list("pk", "name"))
    rows = Demonstration.objects.filter(project__in=projects).exclude(status=DemoStatus.RECORDING)
    counts = {}
    for project_id, status, n in rows.values_list("project", "status").annotate(n=Count("pk")).order_by():
        counts[project_id, status] = n
    statuses = [(value, label) for value, label in DemoStatus.choices if value != DemoStatus.RECORDING]
    return [
        (name, [(status, label, counts.get((pk, status), 0)) for status, label in statuses])
        for pk, name in sorted(names.items(), key=lambda item: item[1])
    ]


def review_block(user, roles: dict) -> dict:
    """The review queue of the projects where ``user`` reviews: counts per status (linked to the filtered
    list), demos marked unsure awaiting a second reviewer, and recordings an admin may observe."""
    projects = projects_with(roles, REVIEW_ROLES)
    demos = Demonstration.objects.filter(project__in=projects)
    unsure = (
        DemoReview.objects.filter(demonstration__in=demos, demonstration__status__in=EDITABLE_STATUSES)
        .exclude(unsure_by=None)
        .select_related("demonstration__project", "unsure_by")
        .order_by("-updated_at")[:HOME_LIMIT]
    )
    admin_projects = projects_with(roles, (Role.ADMIN,))
    observable = (  # their own recordings are in the blocks above
        demos.filter(project__in=admin_projects, status=DemoStatus.RECORDING)
        .exclude(Q(navigator=user) | Q(instructor=user))
        .select_related("project")
    )
    return {
        "queue": queue_counts(projects),
        "unsure": [(linked([r.demonstration], user, roles)[0], r.unsure_by) for r in unsure],
        "observable": linked(observable[:HOME_LIMIT], user, roles),
    }


def research_block(roles: dict) -> dict:
    """The projects where the user researches or administers (for their split reports) and their recent exports."""
    projects = projects_with(roles, RESEARCH_ROLES)
    exports = ExportJob.objects.filter(project__in=projects).select_related("project")[:HOME_LIMIT]
    return {
        "research_projects": Project.objects.filter(pk__in=projects),
        "exports": list(exports),
    }


def form_work_block(user) -> dict:
    """Form batches with work for ``user`` (how many tasks each) and their assignments in progress; three queries."""
    batches = forms.open_for_work(forms.workable_batches(user, Batch.objects.forms()))
    batches = batches.select_related("project").order_by("-created_at")
    counts = forms.available_counts(user, batches)
    active = Assignment.objects.filter(
        worker=user, status=AssignmentStatus.ACTIVE, expires_at__gt=timezone.now(), task__batch__kind=BatchKind.FORM
    )
    with_work = list(batches.filter(pk__in=list(counts))[:HOME_LIMIT])
    return {"form_batches": [(b, counts[b.pk]) for b in with_work], "form_active": active.count()}


def home_context(request, user) -> dict:
    """Everything the signed-in home page shows; a bounded number of queries however many demos there are."""
    roles = project_roles(user)
    held = set(roles.values())
    recent = Demonstration.objects.visible_to(user).select_related("project")[:HOME_LIMIT]
    context = {
        "projects": Project.objects.for_user(user).annotate(demo_count=Count("demonstrations")),
        "recent": linked(recent, user, roles) if roles else [],
        "roles": held,
        "records": bool(held & set(RECORD_ROLES)),
        "reviews": bool(held & set(REVIEW_ROLES)),
        "researches": bool(held & set(RESEARCH_ROLES)),
    }
    context.update(recording_blocks(request, user, roles))  # anyone may navigate or instruct, not only annotators
    context.update(form_work_block(user))
    if context["reviews"]:
        context.update(review_block(user, roles))
    if context["researches"]:
        context.update(research_block(roles))
    return context


def healthz(request):
    """Liveness and database check for process supervisors and load balancers."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return JsonResponse({"status": "ok", "database": connection.vendor})


def favicon(request):
    """``/favicon.ico``, which browsers ask for on every site: the static icon (``static/favicon.ico``)."""
    return redirect(static("favicon.ico"), permanent=True)
