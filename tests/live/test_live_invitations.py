"""Invitations to instruct a live session: random, stored (digest only), expiring, revocable and single-use.
A project member can no longer forge one from the demonstration's name (the codes were signatures of
``{"demo": name}`` under a known development key). The live socket's side is in ``tests/live/test_live_consumer.py``."""

import hashlib
from datetime import timedelta

from django.core import signing
from django.test import Client
from django.utils import timezone

from annotation.actions import live
from annotation.models import Invitation
from tests.support.actors import make_user, start_demo


def browser(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def shown_link(user, demo) -> str:
    """The invitation link on the navigator's page, as a path."""
    html = browser(user).get(f"/sessions/{demo.name}/navigate").text
    url = html.split('id="invite-url" type="text" readonly value="', 1)[1].split('"', 1)[0]
    return "/" + url.split("://", 1)[1].split("/", 1)[1]


def test_a_code_forged_from_the_demonstrations_name_is_refused(owner, alpha, teammate):
    demo = start_demo(owner, alpha)
    forged = signing.dumps({"demo": demo.name}, salt="annotation.live.invite", compress=True)

    for code in (forged, "0" * 40):
        assert browser(teammate).get(f"/sessions/join/{code}").status_code == 404
        assert browser(teammate).post(f"/sessions/join/{code}").status_code == 404

    demo.refresh_from_db()
    assert demo.instructor is None


def test_the_code_is_random_and_only_its_digest_is_stored(owner, alpha):
    demos = [start_demo(owner, alpha), start_demo(owner, alpha)]

    codes = [shown_link(owner, demo).rsplit("/", 1)[1] for demo in demos]

    assert codes[0] != codes[1]
    assert all(len(code) >= 32 for code in codes)
    rows = list(Invitation.objects.values())
    assert {row["code_sha256"] for row in rows} == {hashlib.sha256(code.encode()).hexdigest() for code in codes}
    assert not any(code in str(row.values()) for code in codes for row in rows)  # no column holds a code
    assert shown_link(owner, demos[0]).endswith(codes[0])  # the same link while it is active


def test_an_invitation_is_used_once(owner, alpha, teammate, reviewer):
    demo = start_demo(owner, alpha)
    link = shown_link(owner, demo)

    assert browser(teammate).post(link).url == f"/sessions/{demo.name}/instruct"
    again = browser(reviewer).post(link)

    assert again.status_code == 410
    assert "already been used" in again.text
    invitation = Invitation.objects.get(demonstration=demo)
    assert (invitation.state, invitation.used_by) == ("used", teammate)
    demo.refresh_from_db()
    assert demo.instructor == teammate
    assert "/sessions/join/" not in browser(owner).get(f"/sessions/{demo.name}/navigate").text


def test_an_expired_invitation_says_so_and_a_new_link_is_shown(owner, alpha, teammate):
    demo = start_demo(owner, alpha)
    link = shown_link(owner, demo)
    Invitation.objects.update(expires_at=timezone.now() - timedelta(seconds=1))

    page = browser(teammate).post(link)

    assert page.status_code == 410
    assert "expired" in page.text
    assert 'id="join-error"' in page.text
    fresh = shown_link(owner, demo)
    assert fresh != link
    assert browser(teammate).post(fresh).url == f"/sessions/{demo.name}/instruct"


def test_the_navigator_revokes_the_link_and_gets_a_new_one(owner, alpha, teammate):
    demo = start_demo(owner, alpha)
    old = shown_link(owner, demo)

    revoked = browser(owner).post(f"/sessions/{demo.name}/invitation/revoke")

    assert revoked.url == f"/sessions/{demo.name}/navigate"
    page = browser(teammate).get(old)
    assert page.status_code == 410
    assert "revoked" in page.text
    new = shown_link(owner, demo)
    assert new != old
    assert Invitation.objects.get(code_sha256=hashlib.sha256(old.rsplit("/", 1)[1].encode()).hexdigest()).revoked_by
    assert browser(teammate).post(new).url == f"/sessions/{demo.name}/instruct"


def test_only_the_navigator_or_a_project_admin_revokes(owner, alpha, teammate):
    demo = start_demo(owner, alpha)
    link = shown_link(owner, demo)
    admin = make_user("projectadmin", alpha, "admin")

    assert browser(teammate).post(f"/sessions/{demo.name}/invitation/revoke").status_code == 404
    assert browser(teammate).get(link).status_code == 200  # still valid
    assert browser(admin).post(f"/sessions/{demo.name}/invitation/revoke").status_code == 302
    assert browser(teammate).get(link).status_code == 410


def test_the_home_page_shows_the_same_single_invitation(owner, alpha):
    demo = start_demo(owner, alpha)
    home = browser(owner).get("/").text

    assert shown_link(owner, demo) in home
    assert Invitation.objects.filter(demonstration=demo).count() == 1
    assert live.do_issue_invitation(owner, demo).code in home
