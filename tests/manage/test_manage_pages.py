"""Management pages: projects (create, settings, choice lists), members and roles, personal API tokens; who may
do what (project admins manage their project, a superuser every project; non-members get 404, other roles 403)."""

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotation.models import Membership, Project, Role
from tests.support.actors import make_user, signed_in

pytestmark = pytest.mark.django_db


@pytest.fixture
def superuser(db):
    return get_user_model().objects.create_superuser("root", password="Root-Passw0rd!")


@pytest.fixture
def newcomer(db):
    return make_user("newcomer")


# --- Projects -------------------------------------------------------------------------------------------------


def test_the_projects_page_lists_your_projects_with_your_role(admin, beta, researcher):
    html = signed_in(researcher).get("/projects/").content.decode()
    assert 'data-project="alpha"' in html
    assert 'data-project="beta"' not in html
    assert "/projects/alpha/exports/" in html
    assert "/projects/alpha/members/" not in html  # only admins manage members
    assert 'id="project-create"' not in html  # no permission to create projects
    assert "/projects/alpha/members/" in signed_in(admin).get("/projects/").content.decode()


def test_a_superuser_creates_a_project_and_becomes_its_admin(superuser):
    response = signed_in(superuser).post("/projects/", {"name": "gamma", "title": "Gamma"})
    assert response.status_code == 302
    assert response["Location"] == "/projects/gamma/members/"
    project = Project.objects.get(name="gamma")
    assert project.memberships.get().role == Role.ADMIN


def test_a_taken_or_malformed_project_name_is_refused_on_the_form(superuser, alpha):
    taken = signed_in(superuser).post("/projects/", {"name": "alpha"})
    malformed = signed_in(superuser).post("/projects/", {"name": "no spaces"})
    assert taken.status_code == malformed.status_code == 400
    assert "already taken" in taken.content.decode()
    assert Project.objects.count() == 1


def test_creating_a_project_needs_the_permission(admin):
    assert signed_in(admin).post("/projects/", {"name": "gamma"}).status_code == 403
    assert not Project.objects.filter(name="gamma").exists()


def test_anonymous_visitors_are_sent_to_sign_in(alpha):
    for path in ("/projects/", "/projects/alpha/members/", "/account/token/", "/projects/alpha/exports/"):
        response = Client().get(path)
        assert (response.status_code, response["Location"].split("?")[0]) == (302, "/accounts/login/"), path


def test_an_admin_saves_settings_and_choice_lists_which_the_api_lists(admin):
    response = signed_in(admin).post(
        "/projects/alpha/settings/",
        {
            "title": "Alpha v2",
            "description": "",
            "category_choices": "Shopping\n  Travel \n\nShopping",
            "subcategory_choices": "Flights",
            "region_choices": "Europe\nAmericas",
        },
    )
    assert response.status_code == 302
    project = Project.objects.get(name="alpha")
    assert (project.title, project.category_choices, project.region_choices) == (
        "Alpha v2",
        ["Shopping", "Travel"],
        ["Europe", "Americas"],
    )
    api = APIClient()
    api.force_authenticate(admin)
    listed = api.get("/api/projects/alpha/").json()
    assert listed["category_choices"] == ["Shopping", "Travel"]
    assert "Shopping\nTravel" in signed_in(admin).get("/projects/alpha/settings/").content.decode()


def test_a_too_long_choice_is_refused_naming_the_field(admin):
    response = signed_in(admin).post("/projects/alpha/settings/", {"category_choices": "x" * 101})
    assert response.status_code == 400
    assert "longer than 100 characters" in response.content.decode()
    assert Project.objects.get(name="alpha").category_choices == []


@pytest.mark.parametrize("role", [Role.ANNOTATOR, Role.REVIEWER, Role.RESEARCHER])
@pytest.mark.parametrize("path", ["/projects/alpha/settings/", "/projects/alpha/members/"])
def test_other_roles_get_403_on_the_management_pages(alpha, role, path):
    user = make_user(f"a-{role}", alpha, role)
    response = signed_in(user).get(path)
    assert response.status_code == 403
    assert 'id="error-page"' in response.content.decode()
    assert signed_in(user).post("/projects/alpha/members/add", {"username": "x", "role": "admin"}).status_code == 403


def test_outsiders_get_404_on_every_project_page(alpha, outsider):
    for path in ("settings/", "members/", "splits/", "exports/", "evaluations/"):
        assert signed_in(outsider).get(f"/projects/alpha/{path}").status_code == 404, path
    assert signed_in(outsider).get("/projects/nope/members/").status_code == 404


# --- Members and roles ----------------------------------------------------------------------------------------


def test_an_admin_adds_a_member_by_username(admin, newcomer):
    client = signed_in(admin)
    response = client.post("/projects/alpha/members/add", {"username": "newcomer", "role": "reviewer"})
    assert response.status_code == 302
    assert Membership.objects.get(user=newcomer).role == Role.REVIEWER
    page = client.get("/projects/alpha/members/").content.decode()
    assert 'data-username="newcomer"' in page
    assert "is now Reviewer" in page


def test_adding_an_unknown_account_or_a_member_twice_says_why(admin, owner):
    unknown = signed_in(admin).post("/projects/alpha/members/add", {"username": "ghost", "role": "annotator"})
    twice = signed_in(admin).post("/projects/alpha/members/add", {"username": "owner", "role": "admin"})
    bad_role = signed_in(admin).post("/projects/alpha/members/add", {"username": "owner", "role": "king"})
    assert unknown.status_code == twice.status_code == bad_role.status_code == 400
    assert "no account named &#x27;ghost&#x27;" in unknown.content.decode()
    assert "already a member" in twice.content.decode()
    assert Membership.objects.get(user=owner).role == Role.ANNOTATOR


def test_an_admin_changes_a_role_and_removes_a_member(admin, owner):
    membership = Membership.objects.get(user=owner)
    changed = signed_in(admin).post(f"/projects/alpha/members/{membership.pk}/role", {"role": "researcher"})
    assert changed.status_code == 302
    assert Membership.objects.get(pk=membership.pk).role == Role.RESEARCHER
    removed = signed_in(admin).post(f"/projects/alpha/members/{membership.pk}/remove")
    assert removed.status_code == 302
    assert not Membership.objects.filter(pk=membership.pk).exists()
    assert signed_in(owner).get("/projects/alpha/splits/").status_code == 404


def test_the_last_admin_can_be_neither_demoted_nor_removed(admin):
    membership = Membership.objects.get(user=admin)
    demoted = signed_in(admin).post(f"/projects/alpha/members/{membership.pk}/role", {"role": "annotator"})
    removed = signed_in(admin).post(f"/projects/alpha/members/{membership.pk}/remove")
    assert demoted.status_code == removed.status_code == 409
    assert "only admin" in removed.content.decode()
    assert Membership.objects.get(pk=membership.pk).role == Role.ADMIN


def test_a_membership_of_another_project_cannot_be_changed_from_this_one(admin, outsider):
    """Not found here (404, as a made-up id), whatever the form says: not a 400 about the form."""
    foreign = Membership.objects.get(user=outsider)
    removed = signed_in(admin).post(f"/projects/alpha/members/{foreign.pk}/remove")
    changed = signed_in(admin).post(f"/projects/alpha/members/{foreign.pk}/role", {})
    assert removed.status_code == changed.status_code == 404
    assert Membership.objects.filter(pk=foreign.pk, role=Role.ANNOTATOR).exists()


def test_a_superuser_manages_a_project_without_being_a_member(superuser, owner):
    assert signed_in(superuser).get("/projects/alpha/members/").status_code == 200
    response = signed_in(superuser).post("/projects/alpha/members/add", {"username": "root", "role": "admin"})
    assert response.status_code == 302


# --- API tokens -----------------------------------------------------------------------------------------------


def api_status(key: str) -> int:
    return APIClient(HTTP_AUTHORIZATION=f"Token {key}").get("/api/projects/").status_code


def test_a_token_is_created_and_its_key_shown_once(owner):
    client = signed_in(owner)
    assert 'id="create-token"' in client.get("/account/token/").content.decode()
    assert client.post("/account/token/create").status_code == 302
    key = Token.objects.get(user=owner).key
    first = client.get("/account/token/").content.decode()
    second = client.get("/account/token/").content.decode()
    assert key in first
    assert key not in second
    assert f"…{key[-4:]}" in second
    assert api_status(key) == 200


def test_a_second_create_is_refused_and_keeps_the_key(owner):
    client = signed_in(owner)
    client.post("/account/token/create")
    key = Token.objects.get(user=owner).key
    client.get("/account/token/")
    response = client.post("/account/token/create", follow=True)
    assert "rotate it" in response.content.decode()
    assert Token.objects.get(user=owner).key == key


def test_rotating_replaces_the_key_and_the_old_one_stops_working(owner):
    old = Token.objects.create(user=owner).key
    client = signed_in(owner)
    assert client.post("/account/token/rotate").status_code == 302
    new = Token.objects.get(user=owner).key
    assert new != old
    assert new in client.get("/account/token/").content.decode()
    assert (api_status(old), api_status(new)) == (401, 200)


def test_revoking_deletes_the_token(owner):
    key = Token.objects.create(user=owner).key
    assert signed_in(owner).post("/account/token/revoke").status_code == 302
    assert not Token.objects.filter(user=owner).exists()
    assert api_status(key) == 401


def test_token_changes_are_posts_only_and_name_a_known_change(owner):
    Token.objects.create(user=owner)
    assert signed_in(owner).get("/account/token/revoke").status_code == 405
    assert signed_in(owner).post("/account/token/delete-all").status_code == 404
    assert Token.objects.filter(user=owner).exists()
