"""Attacks on ``PATCH /api/projects/<name>/`` (``record_traffic``, docs/api.md): admins of another project,
non-members, other roles, removed and blocked users and anonymous callers change nothing (401/403/404); a body that
is not an object, malformed JSON, a huge body, a list or a string for the value is a 400, never a 500; other
fields in the body are not written; PUT and DELETE are not offered."""

import json

import pytest

from annotation.models import Project, Role
from tests.support.actors import make_user, signed_in

pytestmark = pytest.mark.django_db

PATH = "/api/projects/alpha/"


def setting() -> bool:
    return Project.objects.get(name="alpha").record_traffic


def test_no_one_but_an_admin_of_the_project_changes_it(owner, reviewer, researcher, outsider, beta, api_for, client):
    beta_admin = make_user("beta-admin", beta, Role.ADMIN)
    for user, status in ((owner, 403), (reviewer, 403), (researcher, 403), (outsider, 404), (beta_admin, 404)):
        answer = api_for(user).patch(PATH, {"record_traffic": True}, format="json")
        assert answer.status_code == status, (user.username, answer.content)
    assert client.patch(PATH, {"record_traffic": True}, content_type="application/json").status_code in (401, 403)
    assert setting() is False


def test_removed_and_blocked_admins_with_a_token_still_held(alpha, admin, api_for):
    removed = make_user("was-admin", alpha, Role.ADMIN)
    held = api_for(removed)
    alpha.memberships.filter(user=removed).delete()
    assert held.patch(PATH, {"record_traffic": True}, format="json").status_code == 404
    blocked = api_for(admin)
    admin.is_active = False
    admin.save(update_fields=["is_active"])
    assert blocked.patch(PATH, {"record_traffic": True}, format="json").status_code in (401, 403)
    assert setting() is False


@pytest.mark.parametrize(
    "body",
    [
        b"{",
        b'{"record_traffic": tru}',
        b"\xff\xfe",
        b"[]",
        b'[{"record_traffic": true}]',
        b'"record_traffic"',
        b"true",
        b"null",
        b'{"record_traffic": [true]}',
        b'{"record_traffic": {"value": true}}',
        b'{"record_traffic": "true"}',
        b'{"record_traffic": "on"}',
        b'{"record_traffic": 1}',
        b'{"record_traffic": 0}',
        b'{"record_traffic": 1.0}',
        b'{"record_traffic": null}',
        b'{"record_traffic": NaN}',
        b'{"Record_Traffic": true}',
        json.dumps({"record_traffic": "yes", "pad": "x" * 3_000_000}).encode(),
        b'{"a":' * 5000 + b"1" + b"}" * 5000,
    ],
)
def test_anything_but_a_json_boolean_is_a_400(admin, api_for, body):
    answer = api_for(admin).patch(PATH, body, content_type="application/json")
    assert answer.status_code in (400, 413), (answer.status_code, answer.content[:300])
    if answer.status_code == 400 and body.startswith(b"{"):
        assert "errors" in answer.json(), answer.content[:300]
    assert setting() is False


def test_other_fields_are_not_written(admin, api_for):
    body = {"record_traffic": True, "name": "renamed", "title": "Owned", "category_choices": ["x"]}
    answer = api_for(admin).patch(PATH, body, format="json")
    assert answer.status_code == 200, answer.content
    project = Project.objects.get(name="alpha")
    assert (project.title, project.category_choices, project.record_traffic) == ("Alpha", [], True)


def test_put_and_delete_are_not_offered(admin, api_for):
    assert api_for(admin).put(PATH, {"record_traffic": True}, format="json").status_code == 405
    assert api_for(admin).delete(PATH).status_code == 405
    assert Project.objects.filter(name="alpha").exists()


def test_the_settings_page_refuses_other_roles_and_other_projects_admins(owner, researcher, beta):
    form = {"title": "Alpha", "description": "", "record_traffic": "on"}
    for user in (owner, researcher, make_user("beta-boss", beta, Role.ADMIN)):
        assert signed_in(user).post("/projects/alpha/settings/", form).status_code in (403, 404), user.username
    assert setting() is False
