"""Management pages: projects (create, settings, choice lists), members and roles, and your API token. Thin: each
checks with ``annotation.actions.manage`` and calls its ``do_*``; project admins manage their project, a superuser
every project."""

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.db.models import Count
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from ...actions import manage, review
from ...lib.readable import lines
from ...models import Project, Role
from ..page_errors import action_errors, refusals_as_messages, refusals_on_form

# --- The pages' forms: types and shapes; the rules live in ``annotation.actions.manage`` ---------------------------


class ProjectCreateForm(forms.Form):
    name = forms.SlugField(max_length=64, help_text="Letters, digits, - and _: used in URLs and the API.")
    title = forms.CharField(max_length=200, required=False)
    description = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), required=False)


class ProjectSettingsForm(forms.Form):
    title = forms.CharField(max_length=200, required=False)
    description = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), required=False)
    category_choices = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 4}), required=False, label="Categories", help_text="One per line."
    )
    subcategory_choices = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 4}), required=False, label="Subcategories", help_text="One per line."
    )
    region_choices = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 4}), required=False, label="Regions", help_text="One per line."
    )
    record_traffic = forms.BooleanField(
        required=False,
        label="Keep WebLINX recordings' network traffic",
        help_text="The recorder keeps the tab's traffic as HAR per action (privacy rules as step mode's).",
    )

    @classmethod
    def for_project(cls, project):
        initial = {"title": project.title, "description": project.description, "record_traffic": project.record_traffic}
        initial.update({field: "\n".join(getattr(project, field)) for field in CHOICE_FIELDS})
        return cls(initial=initial)

    def choices(self) -> dict:
        return {field: lines(self.cleaned_data[field]) for field in CHOICE_FIELDS}


CHOICE_FIELDS = ("category_choices", "subcategory_choices", "region_choices")


class MemberAddForm(forms.Form):
    username = forms.CharField(max_length=150)
    role = forms.ChoiceField(choices=Role.choices, initial=Role.ANNOTATOR)


class InvitationForm(forms.Form):
    role = forms.ChoiceField(choices=Role.choices, initial=Role.ANNOTATOR)
    days = forms.IntegerField(
        min_value=1, max_value=30, initial=7, label="Valid for (days)", help_text="From 1 to 30 days."
    )
    email = forms.EmailField(required=False, help_text="The link is mailed there too.")
    note = forms.CharField(max_length=200, required=False, help_text="Who it is for (only admins see it).")


@login_required
@require_http_methods(["GET", "POST"])
def projects(request):
    """Your projects with your role, links to what you may manage, and (with the permission) a new project."""
    form = ProjectCreateForm(request.POST or None)
    if request.method == "POST":
        if not manage.can_create_projects(request.user):
            raise PermissionDenied("creating projects needs the annotation.add_project permission")
        if form.is_valid():
            with refusals_on_form(form):
                project = manage.do_create_project(request.user, **form.cleaned_data)
                messages.success(request, f"Project {project.name} created; you are its admin.")
                return redirect("manage-members", name=project.name)
    rows = Project.objects.for_user(request.user).annotate(member_count=Count("memberships", distinct=True))
    roles = dict(request.user.memberships.values_list("project_id", "role"))
    listed = [(project, Role.ADMIN if request.user.is_superuser else roles.get(project.pk)) for project in rows]
    context = {"projects": listed, "form": form, "can_create": manage.can_create_projects(request.user)}
    return render(request, "manage/projects.html", context, status=400 if form.errors else 200)


@login_required
@require_http_methods(["GET", "POST"])
@action_errors
def project_settings(request, name: str):
    """Title, description, the category / subcategory / region suggestions and WebLINX traffic (project admins)."""
    project = manage.check_project_admin(request.user, name)
    form = ProjectSettingsForm(request.POST or None) if request.method == "POST" else None
    if form is not None and form.is_valid():
        with refusals_on_form(form):
            data = form.cleaned_data
            manage.do_update_project(
                project, data["title"], data["description"], form.choices(), data["record_traffic"]
            )
            messages.success(request, "Settings saved.")
            return redirect("manage-settings", name=project.name)
    form = form or ProjectSettingsForm.for_project(project)
    context = {"project": project, "form": form, "tab": "settings", "project_role": Role.ADMIN}
    context["problem_kinds"] = review.kinds_as_text(review.kinds_of(project))  # its form posts to review's page
    return render(request, "manage/settings.html", context, status=400 if form.errors else 200)


@login_required
@require_GET
@action_errors
def members(request, name: str):
    """The members and their roles, with forms to add, change and remove (project admins)."""
    project = manage.check_project_admin(request.user, name)
    return render_members(request, project, MemberAddForm())


def render_members(request, project, form, status=200, invite_form=None):
    rows = project.memberships.select_related("user").order_by("user__username")
    context = {
        "project": project,
        "memberships": rows,
        "form": form,
        "invite_form": invite_form or InvitationForm(),
        "invitations": manage.open_invitations(project).select_related("created_by"),
        "new_link": request.session.pop(NEW_LINK, None),
        "mail": manage.mail_configured(),
        "roles": Role.choices,
        "tab": "members",
        "project_role": Role.ADMIN,
    }
    return render(request, "manage/members.html", context, status=status)


@login_required
@require_POST
@action_errors
def member_add(request, name: str):
    project = manage.check_project_admin(request.user, name)
    form = MemberAddForm(request.POST)
    if form.is_valid():
        with refusals_on_form(form):
            membership = manage.do_add_member(project, form.cleaned_data["username"], form.cleaned_data["role"])
            messages.success(request, f"{membership.user.username} is now {membership.get_role_display()}.")
            return redirect("manage-members", name=project.name)
    return render_members(request, project, form, status=400)


@login_required
@require_POST
@action_errors
def member_role(request, name: str, membership_id: int):
    project = manage.check_project_admin(request.user, name)
    return member_change(
        request, project, lambda: manage.do_change_role(project, membership_id, request.POST.get("role"))
    )


@login_required
@require_POST
@action_errors
def member_remove(request, name: str, membership_id: int):
    project = manage.check_project_admin(request.user, name)
    return member_change(request, project, lambda: manage.do_remove_member(project, membership_id))


def member_change(request, project, change):
    with refusals_as_messages(request) as refusal:
        membership = change()
    if refusal:
        return render_members(request, project, MemberAddForm(), status=refusal.status)
    if membership.pk is None:
        messages.success(request, f"{membership.user.username} removed from {project.name}.")
    else:
        messages.success(request, f"{membership.user.username} is now {membership.get_role_display()}.")
    return redirect("manage-members", name=project.name)


NEW_LINK = "manage_new_invitation_link"  # session key: an invitation link, shown once after it was made


# --- Your API token -------------------------------------------------------------------------------------------

NEW_KEY = "manage_new_token_key"  # session key: the key shown once after it was made


@login_required
@require_GET
def token(request):
    """Your API token: whether you have one and since when; a new key is shown once, right after it is made."""
    context = {"token": manage.token_of(request.user), "new_key": request.session.pop(NEW_KEY, None)}
    return render(request, "manage/token.html", context)


@login_required
@require_POST
def token_change(request, change: str):
    """``create``, ``rotate`` or ``revoke`` your token, then back to the token page."""
    with refusals_as_messages(request):
        if change == "create":
            request.session[NEW_KEY] = manage.do_create_token(request.user).key
        elif change == "rotate":
            request.session[NEW_KEY] = manage.do_rotate_token(request.user).key
        elif change == "revoke" and manage.do_revoke_token(request.user):
            messages.success(request, "Token revoked: it no longer works anywhere.")
    return redirect("manage-tokens")
