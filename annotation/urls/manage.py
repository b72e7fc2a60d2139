"""Management: projects, members and roles, invitation links, people (accounts), your account and API token; sign-in
and password reset (``config/urls.py`` puts them before the admin's and Django's own)."""

from django.contrib.auth import views as auth_views
from django.urls import path, re_path

from ..views.manage import pages, people
from ..views.manage.signin import with_mail

urlpatterns = [
    path("projects/", pages.projects, name="manage-projects"),
    path("projects/<slug:name>/settings/", pages.project_settings, name="manage-settings"),
    path("projects/<slug:name>/members/", pages.members, name="manage-members"),
    path("projects/<slug:name>/members/add", pages.member_add, name="manage-member-add"),
    path("projects/<slug:name>/members/<int:membership_id>/role", pages.member_role, name="manage-member-role"),
    path(
        "projects/<slug:name>/members/<int:membership_id>/remove",
        pages.member_remove,
        name="manage-member-remove",
    ),
    path("projects/<slug:name>/invitations/new", people.invitation_create, name="manage-invitation-create"),
    path(
        "projects/<slug:name>/invitations/<int:invitation_id>/revoke",
        people.invitation_revoke,
        name="manage-invitation-revoke",
    ),
    path("join/<str:token>/", people.join, name="manage-join"),
    path("people/", people.people, name="manage-people"),
    re_path(r"^people/(?P<user_id>\d+)/(?P<change>activate|deactivate)$", people.person_active, name="manage-person"),
    path("account/", people.account, name="manage-account"),
    path("account/token/", pages.token, name="manage-tokens"),
    re_path(r"^account/token/(?P<change>create|rotate|revoke)$", pages.token_change, name="manage-token-change"),
]

# Django's password-reset pages (``django.contrib.auth.urls``), each behind ``with_mail``; listed before that include.
password_reset_urlpatterns = [
    path("password_reset/", with_mail(auth_views.PasswordResetView.as_view()), name="password_reset"),
    path("password_reset/done/", with_mail(auth_views.PasswordResetDoneView.as_view()), name="password_reset_done"),
    path(
        "reset/<uidb64>/<token>/",
        with_mail(auth_views.PasswordResetConfirmView.as_view()),
        name="password_reset_confirm",
    ),
    path("reset/done/", with_mail(auth_views.PasswordResetCompleteView.as_view()), name="password_reset_complete"),
]
