"""People in the app: invitation links to a project (made on the members page, opened at ``/join/<token>/``), the
People page where site admins create and deactivate accounts, and your account page (password change). Thin: the
rules are in ``annotation.actions.manage`` (``invitations``, ``people``)."""

from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth import login as sign_in
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.contrib.auth.forms import UserCreationForm
from django.shortcuts import redirect, render
from django.urls import reverse, reverse_lazy
from django.views.decorators.http import require_http_methods, require_POST

from ...actions import manage
from ..page_errors import action_errors, refusals_as_messages, refusals_as_pages, refusals_on_form
from .pages import NEW_LINK, InvitationForm, MemberAddForm, render_members

TITLES = {404: "Invitation not found", 409: "Already a member", 410: "Invitation no longer valid"}


class JoinForm(UserCreationForm):
    """A new account's username and password, checked as Django's own sign-up form does (unique username,
    ``AUTH_PASSWORD_VALIDATORS``)."""

    class Meta(UserCreationForm.Meta):
        model = get_user_model()
        fields = ("username",)


class AccountCreateForm(UserCreationForm):
    class Meta(UserCreationForm.Meta):
        model = get_user_model()
        fields = ("username", "email")


def invitation_link(request, token: str) -> str:
    return request.build_absolute_uri(reverse("manage-join", args=[token]))


@login_required
@require_POST
@action_errors
def invitation_create(request, name: str):
    """A new invitation link (project admins); back to the members page, which shows it once to copy."""
    project = manage.check_project_admin(request.user, name)
    form = InvitationForm(request.POST)
    if form.is_valid():
        data = form.cleaned_data
        with refusals_on_form(form):
            invitation, token = manage.do_create_invitation(
                project, request.user, data["role"], data["days"], data["email"], data["note"]
            )
            link = invitation_link(request, token)
            request.session[NEW_LINK] = link
            if manage.do_mail_invitation(invitation, link):
                messages.success(request, f"Invitation link made and mailed to {invitation.email}.")
            else:
                messages.success(request, "Invitation link made: copy it and send it to the person.")
            return redirect("manage-members", name=project.name)
    return render_members(request, project, MemberAddForm(), status=400, invite_form=form)


@login_required
@require_POST
@action_errors
def invitation_revoke(request, name: str, invitation_id: int):
    project = manage.check_project_admin(request.user, name)
    manage.check_project_invitation(project, invitation_id)  # another project's: the 404 page
    with refusals_as_messages(request):
        manage.do_revoke_invitation(project, invitation_id)
        messages.success(request, "Invitation link revoked: it no longer works.")
    return redirect("manage-members", name=project.name)


@require_http_methods(["GET", "POST"])
@refusals_as_pages(TITLES)
def join(request, token: str):
    """The invitation link: signed in, one click joins the project with the link's role; otherwise a new account
    (username and password) or a sign-in that comes back here. A refused link (unknown 404, used, revoked or expired
    410, already a member 409) is a page saying so, and nothing is created. Refused sign-ups are counted per link:
    past the limit the form is a 429 page (``manage.check_join_allowed``)."""
    invitation = manage.check_invitation(token)
    manage.check_not_member(invitation, request.user)
    anonymous = not request.user.is_authenticated
    if request.method == "POST" and anonymous:
        manage.check_join_allowed(invitation)
    form = JoinForm(request.POST if request.method == "POST" and anonymous else None)
    if request.method == "POST" and not anonymous:
        manage.do_accept_invitation(token, request.user)
        return joined(request, invitation)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        with refusals_on_form(form, fields=("username",)):  # any other refusal: the page saying so
            membership = manage.do_join_with_new_account(token, data["username"], data["password1"])
            sign_in(request, membership.user, backend="django.contrib.auth.backends.ModelBackend")
            return joined(request, invitation)
    if form.errors:
        manage.do_note_join_failure(invitation)
    context = {
        "invitation": invitation,
        "project": invitation.project,
        "form": form,
        "login_url": f"{reverse('login')}?next={request.path}",
    }
    return render(request, "manage/join.html", context, status=400 if form.errors else 200)


def joined(request, invitation):
    messages.success(request, f"You joined {invitation.project.name} as {invitation.get_role_display()}.")
    return redirect("home")


# --- People (site admins) -----------------------------------------------------------------------------------------


@login_required
@require_http_methods(["GET", "POST"])
@action_errors
def people(request):
    """Every account with its projects and roles; create one; deactivate or reactivate one (site admins)."""
    manage.check_site_admin(request.user)
    form = AccountCreateForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        with refusals_on_form(form):
            user = manage.do_create_account(request.user, data["username"], data["password1"], data.get("email", ""))
            messages.success(request, f"Account {user.username} created: add it to a project on its members page.")
            return redirect("manage-people")
    context = {"accounts": manage.accounts(), "form": form}
    return render(request, "manage/people.html", context, status=400 if form.errors else 200)


@login_required
@require_POST
@action_errors
def person_active(request, user_id: int, change: str):
    user = manage.do_set_active(request.user, user_id, change == "activate")
    state = "active again" if user.is_active else "deactivated: it can no longer sign in"
    messages.success(request, f"{user.username} is {state}.")
    return redirect("manage-people")


# --- Your account -------------------------------------------------------------------------------------------------


class AccountView(auth_views.PasswordChangeView):
    """Your account: your projects and roles, and a new password (Django's password change, with
    ``AUTH_PASSWORD_VALIDATORS``); other sessions end, this one stays signed in, and the API token is deleted
    (``manage.grants``: every password change does that, here or elsewhere)."""

    template_name = "manage/account.html"
    success_url = reverse_lazy("manage-account")

    def get_context_data(self, **kwargs):
        memberships = self.request.user.memberships.select_related("project").order_by("project__name")
        return {**super().get_context_data(**kwargs), "memberships": memberships}

    def form_valid(self, form):
        had_token = manage.token_of(self.request.user) is not None
        response = super().form_valid(form)
        revoked = " Your API token was revoked: make a new one on the token page." if had_token else ""
        messages.success(self.request, f"Password changed. Your other sign-ins and open live sessions ended.{revoked}")
        return response

    def form_invalid(self, form):
        response = super().form_invalid(form)
        response.status_code = 400
        return response


account = AccountView.as_view()
