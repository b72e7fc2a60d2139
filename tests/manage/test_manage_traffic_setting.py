"""A project's WebLINX traffic setting (``record_traffic``, docs/recorder.md#raw-dump): off by default; an admin sets
it on the settings page or with ``PATCH /api/projects/<name>/``; the project API and a recording's start answer show
it. Other roles get 403, non-members 404, a value that is not a boolean a 400 naming the field."""

import re

import pytest

from tests.support.actors import signed_in
from tests.support.recorder import start_recording

pytestmark = pytest.mark.django_db

SETTINGS = {"title": "Alpha", "description": ""} | dict.fromkeys(
    ("category_choices", "subcategory_choices", "region_choices"), ""
)


def setting(api_for, user) -> bool:
    return api_for(user).get("/api/projects/alpha/").json()["record_traffic"]


def test_an_admin_turns_it_on_and_off_on_the_settings_page(admin, api_for):
    assert setting(api_for, admin) is False
    page = signed_in(admin)
    assert 'name="record_traffic"' in page.get("/projects/alpha/settings/").content.decode()
    assert page.post("/projects/alpha/settings/", SETTINGS | {"record_traffic": "on"}).status_code == 302
    assert setting(api_for, admin) is True
    checked = re.compile(r'<input[^>]*name="record_traffic"[^>]*checked')
    assert checked.search(page.get("/projects/alpha/settings/").content.decode())
    assert page.post("/projects/alpha/settings/", SETTINGS).status_code == 302
    assert setting(api_for, admin) is False
    assert not checked.search(page.get("/projects/alpha/settings/").content.decode())


def test_the_api_sets_it_for_admins_only_and_a_recording_start_carries_it(admin, owner, reviewer, outsider, api_for):
    path = "/api/projects/alpha/"
    on = api_for(admin).patch(path, {"record_traffic": True}, format="json")
    assert (on.status_code, on.json()["record_traffic"]) == (200, True)
    assert start_recording(api_for(owner), client_id="traffic-1").json()["record_traffic"] is True
    assert api_for(reviewer).patch(path, {"record_traffic": False}, format="json").status_code == 403
    assert api_for(outsider).patch(path, {"record_traffic": False}, format="json").status_code == 404
    for body in ({}, {"record_traffic": "yes"}, {"record_traffic": 1}, {"record_traffic": None}):
        refused = api_for(admin).patch(path, body, format="json")
        assert refused.status_code == 400, body
        assert [error["field"] for error in refused.json()["errors"]] == ["record_traffic"]
    assert setting(api_for, admin) is True
