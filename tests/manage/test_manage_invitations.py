"""Invitation links to a project (``ProjectInvitation``), through the pages and the API: a project admin makes one
with a role; each link is used once by one person (a new account or a signed-in one); refused links (unknown 404,
used / revoked / expired 410, already a member 409) create nothing; only project admins and site admins invite
(non-members 404, other roles 403); the sign-up form, which says when a username is taken, is throttled per address
and per link (ten refused sign-ups, then 429 whatever the name)."""

import re
import time
from datetime import timedelta
from urllib.parse import urlencode

import pytest
from django.contrib.auth import get_user_model
from django.core import mail
from django.db import connection
from django.test import Client
from django.utils import timezone

from annotation.actions.manage.invitations import do_create_invitation
from annotation.models import Membership, ProjectInvitation, Role, token_digest
from devtools.processes import asgi_server, database_url
from tests.support.actors import make_user, signed_in, token_client
from tests.support.site_client import Client as SiteClient

pytestmark = pytest.mark.django_db
PASSWORD = "Fresh-Passw0rd-42"


def make_link(client, project="alpha", role="annotator", **extra) -> str:
    """Make a link on the members page and read it as the admin does: from the page it redirects to."""
    response = client.post(f"/projects/{project}/invitations/new", {"role": role, "days": 7, **extra})
    assert response.status_code == 302, response.content
    page = client.get(response["Location"]).content.decode()
    return re.search(r'id="invitation-link" type="text" readonly value="http://testserver(/join/[^"]+/)"', page)[1]


def join_new(link, username, password=PASSWORD):
    client = Client()
    answer = client.post(link, {"username": username, "password1": password, "password2": password})
    return client, answer


def test_three_people_join_with_three_links_each_with_its_role(admin, alpha):
    boss = signed_in(admin)
    links = [make_link(boss, role=role) for role in ("annotator", "reviewer", "researcher")]
    assert len(set(links)) == 3
    for link, name in zip(links, ("ann", "rev", "res"), strict=True):
        client, answer = join_new(link, name)
        assert answer.status_code == 302
        assert answer["Location"] == "/"
        assert "You joined alpha" in client.get("/").content.decode()  # signed in, with the message
    roles = {m.user.username: m.role for m in alpha.memberships.select_related("user")}
    assert roles == {"boss": "admin", "ann": "annotator", "rev": "reviewer", "res": "researcher"}
    assert Client().login(username="rev", password=PASSWORD)
    # Every link is used up: the second use of any is refused and creates nothing.
    for link in links:
        client, answer = join_new(link, "late")
        assert answer.status_code == 410
        assert "used already" in answer.content.decode()
    assert not get_user_model().objects.filter(username="late").exists()
    assert "No open invitation links: make one above" in boss.get("/projects/alpha/members/").content.decode()


def test_a_signed_in_person_joins_with_one_click_and_a_member_is_refused(admin, alpha, beta, outsider, owner):
    link = make_link(signed_in(admin), role="reviewer")
    member = signed_in(owner).get(link)
    assert member.status_code == 409
    assert "already a member" in member.content.decode()
    assert signed_in(owner).post(link).status_code == 409
    assert Membership.objects.get(project=alpha, user=owner).role == Role.ANNOTATOR
    outsider_client = signed_in(outsider)
    page = outsider_client.get(link).content.decode()
    assert 'id="join"' in page
    assert "as <b>Reviewer</b>" in page
    assert outsider_client.post(link).status_code == 302
    assert Membership.objects.get(project=alpha, user=outsider).role == Role.REVIEWER
    assert outsider_client.get("/projects/alpha/stats/").status_code == 200


def test_a_new_account_must_pass_the_password_validators_and_take_a_free_username(admin, owner):
    link = make_link(signed_in(admin))
    client, weak = join_new(link, "newbie", "12345678")
    assert weak.status_code == 400
    assert "password" in weak.content.decode().lower()
    client, taken = join_new(link, "OWNER")
    assert taken.status_code == 400
    assert "already exists" in taken.content.decode()
    _client, mismatch = Client(), Client().post(link, {"username": "x1", "password1": PASSWORD, "password2": "other"})
    assert mismatch.status_code == 400
    assert not get_user_model().objects.filter(username__in=["newbie", "x1"]).exists()
    assert ProjectInvitation.objects.get().state == "open"  # a failed form does not use the link
    assert join_new(link, "newbie")[1].status_code == 302


def test_expired_revoked_and_unknown_links_are_refused_and_create_nothing(admin, alpha, outsider):
    boss = signed_in(admin)
    expired, revoked = make_link(boss), make_link(boss)
    ProjectInvitation.objects.filter(pk=ProjectInvitation.objects.order_by("pk").first().pk).update(
        expires_at=timezone.now() - timedelta(minutes=1)
    )
    invitation = ProjectInvitation.objects.order_by("pk").last()
    assert boss.post(f"/projects/alpha/invitations/{invitation.pk}/revoke").status_code == 302
    for link, status, words in [
        (expired, 410, "expired"),
        (revoked, 410, "revoked"),
        ("/join/not-a-real-token/", 404, "no such invitation link"),
    ]:
        for answer in (Client().get(link), join_new(link, "ghost")[1], signed_in(outsider).post(link)):
            assert answer.status_code == status
            assert words in answer.content.decode()
    assert not get_user_model().objects.filter(username="ghost").exists()
    assert not alpha.memberships.filter(user=outsider).exists()


def test_only_project_admins_and_site_admins_make_and_revoke_links(admin, alpha, owner, reviewer, researcher, outsider):
    for user in (owner, reviewer, researcher):
        assert signed_in(user).post("/projects/alpha/invitations/new", {"role": "admin", "days": 7}).status_code == 403
        assert signed_in(user).get("/projects/alpha/members/").status_code == 403
    assert signed_in(outsider).post("/projects/alpha/invitations/new", {"role": "admin", "days": 7}).status_code == 404
    assert Client().post("/projects/alpha/invitations/new", {"role": "admin"}).status_code == 302  # to sign in
    assert not ProjectInvitation.objects.exists()
    superuser = get_user_model().objects.create_superuser("root", password="Root-Passw0rd!")
    make_link(signed_in(superuser))
    invitation = ProjectInvitation.objects.get()
    assert signed_in(owner).post(f"/projects/alpha/invitations/{invitation.pk}/revoke").status_code == 403
    assert ProjectInvitation.objects.get().state == "open"


def test_the_invitation_form_names_the_bad_field(admin):
    answer = signed_in(admin).post("/projects/alpha/invitations/new", {"role": "boss", "days": 99})
    assert answer.status_code == 400
    page = answer.content.decode()
    assert "Select a valid choice" in page
    assert "less than or equal to 30" in page
    assert not ProjectInvitation.objects.exists()


def test_with_mail_configured_the_link_is_mailed_too(settings, admin):
    settings.PASSWORD_RESET_ENABLED = True
    link = make_link(signed_in(admin), email="new@example.com")
    assert len(mail.outbox) == 1
    assert mail.outbox[0].to == ["new@example.com"]
    assert f"http://testserver{link}" in mail.outbox[0].body
    assert join_new(link, "mailed")[1].status_code == 302
    assert get_user_model().objects.get(username="mailed").email == "new@example.com"


def test_without_mail_no_mail_is_sent_and_the_page_says_copy(settings, admin):
    assert settings.PASSWORD_RESET_ENABLED is False
    boss = signed_in(admin)
    make_link(boss, email="new@example.com")
    assert mail.outbox == []
    assert "No mail is configured, so copy the link" in boss.get("/projects/alpha/members/").content.decode()


def test_only_the_token_digest_is_stored(admin):
    link = make_link(signed_in(admin))
    token = link.split("/")[2]
    assert len(token) >= 40
    assert not ProjectInvitation.objects.filter(token_sha256=token).exists()
    assert token not in str(list(ProjectInvitation.objects.values()))


# --- API ------------------------------------------------------------------------------------------------------


def test_the_api_makes_lists_and_revokes_links(admin, alpha):
    api = token_client(admin)
    made = [
        api.post("/api/projects/alpha/invitations/", {"role": role, "days": 3}, format="json")
        for role in ("reviewer", "annotator")
    ]
    assert [answer.status_code for answer in made] == [201, 201]
    body = made[0].json()
    assert body["role"] == "reviewer"
    assert body["state"] == "open"
    assert body["mailed"] is False
    assert body["link"].startswith("http://testserver/join/")
    listed = api.get("/api/projects/alpha/invitations/").json()
    assert {row["id"] for row in listed} == {made[0].json()["id"], made[1].json()["id"]}
    assert all("link" not in row and "token_sha256" not in row for row in listed)
    # Used through the page, then revoked through the API: 409; the other one revoked: its link answers 410.
    path = body["link"].removeprefix("http://testserver")
    assert join_new(path, "viaapi")[1].status_code == 302
    used = api.delete(f"/api/projects/alpha/invitations/{body['id']}/")
    assert used.status_code == 409
    assert used.json()["code"] == "conflict"
    other = made[1].json()
    revoked = api.delete(f"/api/projects/alpha/invitations/{other['id']}/")
    assert revoked.status_code == 200
    assert revoked.json()["state"] == "revoked"
    assert Client().get(other["link"].removeprefix("http://testserver")).status_code == 410
    states = {row["id"]: (row["state"], row["used_by"]) for row in api.get("/api/projects/alpha/invitations/").json()}
    assert states == {body["id"]: ("used", "viaapi"), other["id"]: ("revoked", None)}


def test_the_api_refuses_other_roles_non_members_and_bad_input(
    admin, alpha, beta, owner, reviewer, researcher, outsider
):
    for user in (owner, reviewer, researcher):
        api = token_client(user)
        assert api.get("/api/projects/alpha/invitations/").status_code == 403
        answer = api.post("/api/projects/alpha/invitations/", {"role": "admin"}, format="json")
        assert answer.status_code == 403
        assert answer.json()["code"] == "forbidden"
    assert token_client(outsider).get("/api/projects/alpha/invitations/").status_code == 404
    api = token_client(admin)
    bad = api.post("/api/projects/alpha/invitations/", {"role": "chief", "days": 0}, format="json")
    assert bad.status_code == 400
    assert {error["field"] for error in bad.json()["errors"]} >= {"role", "days"}
    assert api.delete("/api/projects/alpha/invitations/999/").status_code == 404
    made = token_client(get_user_model().objects.create_superuser("root", password="x")).post(
        "/api/projects/beta/invitations/", {"role": "annotator"}, format="json"
    )
    assert made.status_code == 201
    assert api.delete(f"/api/projects/alpha/invitations/{made.json()['id']}/").status_code == 404  # beta's
    assert api.delete(f"/api/projects/beta/invitations/{made.json()['id']}/").status_code == 404  # not a member
    assert ProjectInvitation.objects.get().state == "open"


def test_revoking_another_projects_or_a_used_link_on_the_page_is_refused(admin, alpha, beta):
    bea = make_user("bea", beta, Role.ADMIN)
    make_link(signed_in(bea), project="beta")
    theirs = ProjectInvitation.objects.get()
    assert signed_in(admin).post(f"/projects/alpha/invitations/{theirs.pk}/revoke").status_code == 404
    link = make_link(signed_in(admin))
    assert join_new(link, "joined")[1].status_code == 302
    used = ProjectInvitation.objects.get(project=alpha)
    answer = signed_in(admin).post(f"/projects/alpha/invitations/{used.pk}/revoke", follow=True)
    assert "used already: remove the member instead" in answer.content.decode()
    assert {row.state for row in ProjectInvitation.objects.all()} == {"open", "used"}


# --- Asking about usernames: refused sign-ups are throttled per link ------------------------------------------------

PROBER, NEIGHBOUR = "203.0.113.7", "198.51.100.20"


def sign_up_from(address, link, username, password=PASSWORD):
    fields = {"username": username, "password1": password, "password2": password}
    return Client(REMOTE_ADDR=address).post(link, fields)


def test_ten_refused_sign_ups_stop_the_link_for_every_address_and_teammates_behind_that_address_still_join(
    admin, owner, teammate
):
    """A lab behind one address (NAT): refusals on one person's link stop that link only (the second outside review:
    ten refusals from one address locked the whole team out of their fresh links)."""
    boss = signed_in(admin)
    probed, other = make_link(boss), make_link(boss)
    names = ["owner", "teammate", "boss", "nobody", "OWNER"]
    for attempt in range(10):  # taken names, and free ones with a password the validators refuse
        name = names[attempt % len(names)]
        answer = sign_up_from(PROBER, probed, name, PASSWORD if name != "nobody" else "12345678")
        assert answer.status_code == 400, attempt

    for address in (PROBER, NEIGHBOUR):
        for name in ("owner", "free-name"):  # a taken and a free name get the same answer: no answer at all
            refused = sign_up_from(address, probed, name)
            assert refused.status_code == 429, (address, name)
            assert 1 <= int(refused["Retry-After"]) <= 300
            assert "too many refused sign-ups" in refused.content.decode()
            assert "already exists" not in refused.content.decode()
    assert not get_user_model().objects.filter(username="free-name").exists()
    assert ProjectInvitation.objects.filter(used_at=None).count() == 2  # nothing was used up
    assert sign_up_from(PROBER, other, "free-name").status_code == 302  # a teammate's own link, same address


def test_the_refusal_ends_with_the_window(admin, owner, settings):
    settings.LOGIN_FAILURE_WINDOW_SECONDS = 5
    link = make_link(signed_in(admin))
    for _ in range(10):
        assert sign_up_from(PROBER, link, "owner").status_code == 400
    assert sign_up_from(PROBER, link, "late").status_code == 429

    deadline = time.monotonic() + 20
    while (answer := sign_up_from(PROBER, link, "late")).status_code == 429 and time.monotonic() < deadline:
        time.sleep(0.1)  # the counts expire on their own

    assert answer.status_code == 302


def test_a_signed_in_person_joins_with_one_click_however_often_others_failed(admin, owner, outsider):
    link = make_link(signed_in(admin))
    for _ in range(10):
        assert join_new(link, "owner")[1].status_code == 400  # from the test client's address
    assert signed_in(outsider).post(link).status_code == 302
    assert Membership.objects.filter(user=outsider, project__name="alpha").exists()


def sign_up_over_http(url: str, link: str, username: str, address: str, password=PASSWORD):
    """The link's sign-up form on the real server, as a browser behind the trusted proxy fills it (the proxy's
    ``X-Forwarded-For`` names the client)."""
    person = SiteClient(url)
    assert person.get(link).status == 200  # the form, and its CSRF cookie
    token = person.cookies["csrftoken"]
    fields = {"username": username, "password1": password, "password2": password, "csrfmiddlewaretoken": token}
    headers = {"Content-Type": "application/x-www-form-urlencoded", "X-Forwarded-For": address}
    return person.request("POST", link, urlencode(fields).encode(), headers)


@pytest.mark.processes
@pytest.mark.django_db(transaction=True)
def test_probing_usernames_through_the_real_server_stops_after_ten_refusals(admin, alpha, owner, tmp_path):
    """Through the server (behind ``TRUSTED_PROXIES=127.0.0.1``, so each request names its client): ten sign-ups
    refused for a taken name or a weak password, then the eleventh is 429 for a taken and a free name alike, from
    that address on the link, and from another address on the same link; another link from another address still
    signs a person up."""
    probed = "/join/" + do_create_invitation(alpha, admin, Role.ANNOTATOR)[1] + "/"
    other = "/join/" + do_create_invitation(alpha, admin, Role.ANNOTATOR)[1] + "/"
    env = {"DATABASE_URL": database_url(connection.settings_dict), "TRUSTED_PROXIES": "127.0.0.1"}
    with asgi_server(env, tmp_path / "server.log") as url:
        answers = [
            sign_up_over_http(url, probed, "owner" if attempt % 2 else f"ghost{attempt}", PROBER, "1234")
            for attempt in range(10)
        ]
        assert [answer.status for answer in answers] == [400] * 10
        assert "already exists" in answers[1].text
        refused = [
            sign_up_over_http(url, probed, "owner", PROBER),
            sign_up_over_http(url, probed, "free-name", PROBER),
            sign_up_over_http(url, probed, "free-name", NEIGHBOUR),
        ]
        joined = sign_up_over_http(url, other, "free-name", NEIGHBOUR)
    assert [answer.status for answer in refused] == [429, 429, 429]
    assert all("already exists" not in answer.text and answer.headers["retry-after"] for answer in refused)
    assert joined.status == 302
    assert Membership.objects.get(user__username="free-name").project == alpha
    assert ProjectInvitation.objects.get(token_sha256=token_digest(probed.split("/")[2])).state == "open"
