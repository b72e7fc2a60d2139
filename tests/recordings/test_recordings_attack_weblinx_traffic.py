"""Attacks on WebLINX traffic (``record_traffic``, docs/recorder.md#raw-dump) through the ingest API: a plain
(non-step) turn's HAR is kept only while its own project keeps traffic, read at each upload. A client that sends one
anyway (a hostile annotator, or a recorder still under way after an admin turned the setting off) has its turns
stored without it, and a retry of the same batch is no conflict; project A's setting does nothing to project B;
step-mode turns keep theirs either way. HARs with cookies or credential headers are refused whatever the setting."""

import pytest

from annotation.models import Project
from tests.support.payloads import browser_turn, state_blobs, state_refs, step_turn
from tests.support.rawdump import changed, har, har_blob, har_entry
from tests.support.recorder import frame, post_bundle, recordings_url, start_demo

pytestmark = pytest.mark.django_db


def upload(client, name: str, client_id: str, index: int, step: bool = False):
    state, log = state_blobs(index), har_blob(har([har_entry(f"https://www.example.com/api/{index}")]))
    make = step_turn if step else browser_turn
    turn = make(client_id, timestamp=float(index), **state_refs(state), har=log.sha256)
    return post_bundle(client, name, frame([turn], [*state.values(), log]))


def hars(client, name: str) -> dict:
    turns = client.get(recordings_url(name, "turns")).json()
    return {turn["client_id"]: turn["har"] is not None for turn in turns}


def set_traffic(api_for, admin, value: bool) -> None:
    answer = api_for(admin).patch("/api/projects/alpha/", {"record_traffic": value}, format="json")
    assert (answer.status_code, answer.json()["record_traffic"]) == (200, value)


def test_a_plain_turns_har_is_dropped_where_the_project_keeps_no_traffic(owner, api_for):
    client = api_for(owner)
    demo = start_demo(client, client_id="attack-traffic-off")
    assert client.get(recordings_url(demo.name)).json()["record_traffic"] is False
    assert upload(client, demo.name, "t1", 1).status_code == 201
    assert upload(client, demo.name, "t1", 1).status_code in (200, 201)  # the same batch again: no conflict
    assert upload(client, demo.name, "s2", 2, step=True).status_code == 201  # step mode keeps its traffic
    assert hars(client, demo.name) == {"t1": False, "s2": True}


def test_turned_off_mid_recording_later_uploads_keep_no_traffic(owner, admin, api_for):
    client = api_for(owner)
    set_traffic(api_for, admin, True)
    demo = start_demo(client, client_id="attack-traffic-mid")
    assert client.get(recordings_url(demo.name)).json()["record_traffic"] is True
    assert upload(client, demo.name, "t1", 1).status_code == 201
    set_traffic(api_for, admin, False)  # the recorder, told "on" at start, still sends traffic
    assert upload(client, demo.name, "t2", 2).status_code == 201
    set_traffic(api_for, admin, True)
    assert upload(client, demo.name, "t3", 3).status_code == 201
    assert hars(client, demo.name) == {"t1": True, "t2": False, "t3": True}


def test_project_as_setting_does_nothing_to_project_b(owner, admin, outsider, api_for):
    set_traffic(api_for, admin, True)
    other = api_for(outsider)
    demo = start_demo(other, project="beta", client_id="attack-traffic-beta")
    assert other.get(recordings_url(demo.name)).json()["record_traffic"] is False
    assert upload(other, demo.name, "t1", 1).status_code == 201
    assert hars(other, demo.name) == {"t1": False}
    assert Project.objects.get(name="beta").record_traffic is False


@pytest.mark.parametrize(
    ("side", "header"),
    [("request", "Cookie"), ("request", "Authorization"), ("response", "Set-Cookie"), ("request", " authorization")],
)
def test_a_har_with_a_cookie_or_credential_header_is_refused_with_traffic_on(owner, admin, api_for, side, header):
    set_traffic(api_for, admin, True)
    client = api_for(owner)
    demo = start_demo(client, client_id=f"attack-traffic-{side}-{header.strip()}")
    entry = har_entry()
    entry[side]["headers"].append({"name": header, "value": "sid=Heron-4410"})
    state, log = state_blobs(1), har_blob(har([entry]))
    turn = browser_turn("t1", timestamp=1.0, **state_refs(state), har=log.sha256)
    refused = post_bundle(client, demo.name, frame([turn], [*state.values(), log]))
    assert refused.status_code == 400, refused.content
    assert b"Heron-4410" not in refused.content
    assert demo.turns.count() == 0


def test_a_har_with_a_cookie_list_is_refused(owner, admin, api_for):
    set_traffic(api_for, admin, True)
    client = api_for(owner)
    demo = start_demo(client, client_id="attack-traffic-cookies")
    log = har_blob(changed(har(), ["log", "entries", 0, "request", "cookies"], [{"name": "sid", "value": "x"}]))
    state = state_blobs(1)
    turn = browser_turn("t1", timestamp=1.0, **state_refs(state), har=log.sha256)
    assert post_bundle(client, demo.name, frame([turn], [*state.values(), log])).status_code == 400


def test_a_removed_or_blocked_annotators_recorder_stores_nothing_more(owner, admin, alpha, api_for):
    set_traffic(api_for, admin, True)
    client = api_for(owner)
    demo = start_demo(client, client_id="attack-traffic-removed")
    assert upload(client, demo.name, "t1", 1).status_code == 201
    membership = alpha.memberships.get(user=owner)
    membership.delete()
    assert upload(client, demo.name, "t2", 2).status_code in (403, 404)
    alpha.memberships.create(user=owner, role=membership.role)
    owner.is_active = False
    owner.save(update_fields=["is_active"])
    assert upload(client, demo.name, "t3", 3).status_code in (401, 403)
    assert list(demo.turns.values_list("client_id", flat=True)) == ["t1"]
