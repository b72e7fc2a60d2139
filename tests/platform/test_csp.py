"""The app's own pages carry a strict Content-Security-Policy and contain nothing it would block (no inline script,
style or event handler); recorded pages and blobs keep their own, stricter policy. The browser tests
(``tests/platform/test_web_pages.py`` and every other page test) show the pages still work under it."""

import re

import pytest
from django.contrib.auth import get_user_model
from lxml import html

from annotation.actions import live
from annotation.models import Turn
from tests.support.actors import start_demo
from tests.support.review_data import recorded_demo

POLICY = {
    "default-src": "'self'",
    "script-src": "'self'",
    "style-src": "'self'",
    "object-src": "'none'",
    "base-uri": "'none'",
    "frame-ancestors": "'self'",
    "form-action": "'self'",
}
RECORDED_PAGE_POLICY = (
    "sandbox; default-src 'none'; img-src data:; style-src 'unsafe-inline'; form-action 'none'; frame-ancestors 'self'"
)


def directives(header: str) -> dict[str, str]:
    parts = [part.strip().split(None, 1) for part in header.split(";") if part.strip()]
    return {part[0]: part[1] if len(part) > 1 else "" for part in parts}


def assert_strict_policy(response) -> None:
    found = directives(response["Content-Security-Policy"])
    for name, sources in POLICY.items():
        assert found[name].split()[: len(sources.split())] == sources.split(), (name, found[name])
    for name in ("script-src", "style-src", "default-src"):
        assert "'unsafe-inline'" not in found[name]
        assert "'unsafe-eval'" not in found[name]


def blocked_markup(page: str) -> list[str]:
    """What the policy would block in a page: inline scripts and styles without a nonce, event-handler attributes,
    ``style`` attributes and ``javascript:`` URLs."""
    tree = html.fromstring(page)
    found = []
    for script in tree.iter("script"):
        data = script.get("type") == "application/json"
        if not script.get("src") and not data and not script.get("nonce"):
            found.append(f"inline <script>: {(script.text or '')[:60]!r}")
    found += [f"inline <style>: {(s.text or '')[:60]!r}" for s in tree.iter("style") if not s.get("nonce")]
    for element in tree.iter():
        if not isinstance(element.tag, str):
            continue
        for name, value in element.attrib.items():
            if name.startswith("on") or name == "style":
                found.append(f"<{element.tag} {name}={value[:40]!r}>")
            if name in ("href", "src", "action") and re.match(r"\s*javascript:", value, re.IGNORECASE):
                found.append(f"<{element.tag} {name}={value[:40]!r}>")
    return found


@pytest.fixture
def admin_user(db):
    return get_user_model().objects.create_superuser("root", "root@example.org", "root-Passw0rd!")


@pytest.fixture
def chat_demo(owner, alpha, instructor):
    return start_demo(owner, alpha, instructor)


def page_urls(chat_demo, reviewed, invitation) -> list[tuple[str, str]]:
    """(who, path) for every kind of page the app renders."""
    return [
        ("anonymous", "/accounts/login/"),
        ("owner", "/"),
        ("owner", f"/sessions/{chat_demo.name}/navigate"),
        ("instructor", f"/sessions/{chat_demo.name}/instruct"),
        ("teammate", f"/sessions/join/{invitation}"),
        ("reviewer", "/review/"),
        ("reviewer", f"/review/{reviewed.name}/"),
        ("root", "/admin/"),
        ("root", "/admin/annotation/demonstration/"),
        ("root", "/admin/annotation/invitation/"),
        ("root", f"/admin/annotation/demonstration/{reviewed.pk}/change/"),
        ("root", "/api/docs/"),
        ("root", "/projects/"),
        ("root", f"/projects/{chat_demo.project.name}/settings/"),
        ("root", f"/projects/{chat_demo.project.name}/members/"),
        ("root", f"/projects/{chat_demo.project.name}/splits/"),
        ("root", f"/projects/{chat_demo.project.name}/exports/"),
        ("root", f"/projects/{chat_demo.project.name}/evaluations/"),
        ("owner", "/account/token/"),
    ]


def test_every_app_page_has_a_strict_policy_and_nothing_inline_it_would_block(
    client, owner, teammate, instructor, reviewer, admin_user, chat_demo
):
    reviewed = recorded_demo()
    invitation = live.do_issue_invitation(owner, start_demo(owner, chat_demo.project)).code
    users = {"owner": owner, "teammate": teammate, "instructor": instructor, "reviewer": reviewer, "root": admin_user}
    for who, path in page_urls(chat_demo, reviewed, invitation):
        client.logout()
        if who in users:
            client.force_login(users[who])
        response = client.get(path)
        assert response.status_code == 200, (who, path, response.status_code)
        assert_strict_policy(response)
        assert blocked_markup(response.text) == [], path


def test_the_api_docs_load_their_init_script_from_a_file(client, owner):
    client.force_login(owner)
    page = client.get("/api/docs/")
    script = html.fromstring(page.text).xpath("//script[contains(@src, 'script')]/@src")
    assert len(script) == 1

    init = client.get(script[0])

    assert init.status_code == 200
    assert init["Content-Type"].startswith("application/javascript")
    assert "SwaggerUIBundle" in init.content.decode()


def test_recorded_pages_and_blobs_keep_their_own_stricter_policy(client, reviewer):
    demo = recorded_demo()
    turn = Turn.objects.filter(demonstration=demo, page__isnull=False).order_by("seq").first()
    client.force_login(reviewer)

    page = client.get(f"/review/{demo.name}/turns/{turn.pk}/page")
    blob = client.get(f"/api/blobs/{turn.page_id}")

    assert page["Content-Security-Policy"] == RECORDED_PAGE_POLICY
    assert blob["Content-Security-Policy"] == "sandbox; default-src 'none'"


def test_error_pages_are_styled_and_strict(client, owner):
    client.force_login(owner)
    response = client.get("/no/such/page/")
    assert response.status_code == 404
    assert 'id="error-page"' in response.text
    assert "/static/css/app.css" in response.text
    assert_strict_policy(response)
    assert blocked_markup(response.text) == []
