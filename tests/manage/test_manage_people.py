"""Accounts in the app: site admins (``is_staff`` or superuser) create, deactivate and reactivate accounts on the
People page; everyone else is refused (403) and nothing changes; a deactivated person cannot sign in, their session
and API token stop working. Everyone changes their own password on the account page, checked by the validators."""

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from tests.support.actors import make_user, signed_in, token_client

pytestmark = pytest.mark.django_db
PASSWORD = "Fresh-Passw0rd-42"


@pytest.fixture
def root(db):
    return get_user_model().objects.create_superuser("root", password="Root-Passw0rd!")


@pytest.fixture
def staff(db):
    user = make_user("helpdesk")
    user.is_staff = True
    user.save()
    return user


def new_account(client, username, password=PASSWORD, **extra):
    return client.post("/people/", {"username": username, "password1": password, "password2": password, **extra})


def test_site_admins_create_accounts_that_can_sign_in(root, staff):
    for admin, username in ((root, "carol"), (staff, "dave")):
        answer = new_account(signed_in(admin), username, email=f"{username}@example.com")
        assert answer.status_code == 302
        assert Client().login(username=username, password=PASSWORD)
    page = signed_in(staff).get("/people/").content.decode()
    assert 'data-username="carol"' in page
    assert 'data-username="dave"' in page


def test_a_new_account_is_refused_with_a_weak_password_or_a_taken_username(root, owner):
    client = signed_in(root)
    weak = new_account(client, "carol", "password")
    assert weak.status_code == 400
    assert "too common" in weak.content.decode()
    taken = new_account(client, "Owner")
    assert taken.status_code == 400
    assert "already exists" in taken.content.decode()
    assert not get_user_model().objects.filter(username__in=["carol", "Owner"]).exists()


def test_only_site_admins_see_and_use_the_people_page(owner, reviewer, researcher, alpha):
    boss = make_user("boss", alpha, "admin")  # a project admin is no site admin
    for user in (owner, reviewer, researcher, boss):
        client = signed_in(user)
        assert client.get("/people/").status_code == 403
        assert new_account(client, "mallory").status_code == 403
        assert client.post(f"/people/{reviewer.pk}/deactivate").status_code == 403
        assert 'href="/people/"' not in client.get("/").content.decode()
    assert Client().get("/people/").status_code == 302  # to sign in
    assert not get_user_model().objects.filter(username="mallory").exists()
    reviewer.refresh_from_db()
    assert reviewer.is_active


def test_a_deactivated_person_cannot_sign_in_and_their_session_and_token_stop(root, owner):
    session = signed_in(owner)
    api = token_client(owner)
    assert api.get("/api/projects/").status_code == 200
    assert signed_in(root).post(f"/people/{owner.pk}/deactivate").status_code == 302
    assert not Client().login(username="owner", password="owner-Passw0rd!")
    assert session.get("/projects/").status_code == 302  # signed out: to the sign-in page
    assert api.get("/api/projects/").status_code == 401
    page = signed_in(root).get("/people/").content.decode()
    assert "deactivated" in page
    assert signed_in(root).post(f"/people/{owner.pk}/activate").status_code == 302
    assert Client().login(username="owner", password="owner-Passw0rd!")


def test_nobody_deactivates_themselves_and_only_a_superuser_changes_a_superuser(root, staff):
    own = signed_in(staff).post(f"/people/{staff.pk}/deactivate")
    assert own.status_code == 409
    assert "your own account" in own.content.decode()
    assert signed_in(staff).post(f"/people/{root.pk}/deactivate").status_code == 403
    assert signed_in(root).post(f"/people/{root.pk}/deactivate").status_code == 409
    assert signed_in(root).post("/people/99999/deactivate").status_code == 404
    assert signed_in(root).get(f"/people/{staff.pk}/deactivate").status_code == 405
    assert get_user_model().objects.filter(is_active=False).count() == 0


def test_everyone_changes_their_password_on_the_account_page(owner, reviewer):
    client = signed_in(owner)
    page = client.get("/account/").content.decode()
    assert "alpha: Annotator" in page
    wrong = client.post("/account/", {"old_password": "nope", "new_password1": PASSWORD, "new_password2": PASSWORD})
    assert wrong.status_code == 400
    weak = client.post(
        "/account/", {"old_password": "owner-Passw0rd!", "new_password1": "12345678", "new_password2": "12345678"}
    )
    assert weak.status_code == 400
    assert "entirely numeric" in weak.content.decode()
    assert Client().login(username="owner", password="owner-Passw0rd!")
    done = client.post(
        "/account/", {"old_password": "owner-Passw0rd!", "new_password1": PASSWORD, "new_password2": PASSWORD}
    )
    assert done.status_code == 302
    assert client.get("/account/").status_code == 200  # this session stays signed in
    assert Client().login(username="owner", password=PASSWORD)
    assert not Client().login(username="owner", password="owner-Passw0rd!")
    assert Client().login(username="reviewer", password="reviewer-Passw0rd!")  # nobody else's changed
    assert Client().get("/account/").status_code == 302


def api_status(key: str) -> int:
    return APIClient(HTTP_AUTHORIZATION=f"Token {key}").get("/api/projects/").status_code


def new_key(username: str, password: str) -> str:
    answer = APIClient().post("/api/auth/token/", {"username": username, "password": password}, format="json")
    assert answer.status_code == 200, answer.content
    return answer.json()["token"]


def test_a_password_change_on_the_account_page_revokes_the_api_token_and_says_so(owner, reviewer):
    client = signed_in(owner)
    old = new_key("owner", "owner-Passw0rd!")
    kept = new_key("reviewer", "reviewer-Passw0rd!")
    assert new_key("owner", "owner-Passw0rd!") == old  # the same key until the password changes
    done = client.post(
        "/account/",
        {"old_password": "owner-Passw0rd!", "new_password1": PASSWORD, "new_password2": PASSWORD},
        follow=True,
    )
    page = done.content.decode()
    assert "Your API token was revoked: make a new one on the token page." in page
    assert api_status(old) == 401
    fresh = new_key("owner", PASSWORD)
    assert fresh != old
    assert (api_status(fresh), api_status(kept)) == (200, 200)  # the new key works; nobody else's changed
    # The second change, without a token made since the first: no token to revoke, none mentioned.
    Token.objects.filter(user=owner).delete()
    again = client.post(
        "/account/",
        {"old_password": PASSWORD, "new_password1": "Second-Passw0rd-7", "new_password2": "Second-Passw0rd-7"},
        follow=True,
    ).content.decode()
    assert "Password changed." in again
    assert "API token was revoked" not in again
    assert api_status(new_key("owner", "Second-Passw0rd-7")) == 200


def test_an_admin_password_reset_and_a_deactivation_revoke_the_api_token(root, owner, reviewer):
    old = new_key("owner", "owner-Passw0rd!")
    reset = signed_in(root).post(
        f"/admin/auth/user/{owner.pk}/password/",
        {"password1": PASSWORD, "password2": PASSWORD, "usable_password": "true"},
    )
    assert reset.status_code == 302, reset.content.decode()[:2000]
    assert api_status(old) == 401
    fresh = new_key("owner", PASSWORD)
    assert api_status(fresh) == 200
    # Deactivated: the token is deleted, not just refused; reactivated, the old key still does not work.
    other = new_key("reviewer", "reviewer-Passw0rd!")
    assert signed_in(root).post(f"/people/{owner.pk}/deactivate").status_code == 302
    assert not Token.objects.filter(user=owner).exists()
    assert signed_in(root).post(f"/people/{owner.pk}/activate").status_code == 302
    assert api_status(fresh) == 401
    assert api_status(new_key("owner", PASSWORD)) == 200
    assert api_status(other) == 200


def test_signing_in_again_keeps_the_api_token(owner):
    key = new_key("owner", "owner-Passw0rd!")
    for _ in range(2):
        assert Client().login(username="owner", password="owner-Passw0rd!")
    assert Client().post("/accounts/login/", {"username": "owner", "password": "owner-Passw0rd!"}).status_code == 302
    assert api_status(key) == 200


@pytest.mark.parametrize("first", ["", "!unusable"])
def test_a_first_password_on_an_account_made_with_a_token_keeps_the_token(db, first):
    """An account a script or an admin made without a password, then given one: it had no password to steal, so
    its token stays (a change of a usable password ends it)."""
    from django.contrib.auth import get_user_model
    from rest_framework.authtoken.models import Token

    user = get_user_model().objects.create(username="scripted", password=first)
    token = Token.objects.create(user=user)
    user.set_password("First-Passw0rd!")
    user.save()
    assert Token.objects.filter(key=token.key).exists()
    user.set_password("Second-Passw0rd!")
    user.save()
    assert not Token.objects.filter(key=token.key).exists()
