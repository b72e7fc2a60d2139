"""Step mode's raw dump under attack (issue 39 review): what a hand-made HAR or DOM snapshot uploaded with an
annotator's token must not get past the server with (the recorder is not the only client)."""

import signal

import pytest

from tests.support.rawdump import changed, dom_blob, dom_snapshot, har, har_blob, har_entry
from tests.support.recorder import assert_nothing_stored, put_blob


@pytest.fixture
def client(owner, api_for):
    return api_for(owner)


def with_header(name: str, value: str, where: str = "request") -> dict:
    headers = [{"name": "Accept", "value": "*/*"}, {"name": name, "value": value}]
    return har([changed(har_entry(), [where, "headers"], headers)])


@pytest.mark.parametrize(
    ("name", "where"),
    [("X-Auth-Token", "request"), ("x-api-key", "request"), ("X-CSRF-Token", "request"), ("X-Session-Id", "response")],
)
def test_a_credential_header_by_its_name_with_a_value_is_a_400_naming_it(client, media_storage, name, where):
    response = put_blob(client, har_blob(with_header(name, "tok-9f8e7d6c5b4a", where)))

    assert response.status_code == 400, response.content
    assert f"log.entries[0].{where}.headers[1].value" in [error["field"] for error in response.json()["errors"]]
    assert name in response.json()["detail"]
    assert_nothing_stored(None, media_storage)


@pytest.mark.parametrize(
    ("name", "value"), [("X-Auth-Token", "********"), (":authority", "shop.test"), ("Accept-Encoding", "gzip")]
)
def test_a_masked_credential_header_and_ordinary_ones_are_accepted(client, name, value):
    assert put_blob(client, har_blob(with_header(name, value))).status_code == 201


def with_field(attributes: list[str], value: str | None = None) -> dict:
    """A DOM snapshot with one ``<input>`` of these attributes (name, value, ...) and maybe a live value."""
    snapshot = dom_snapshot()
    first = len(snapshot["strings"])
    snapshot["strings"] += ["INPUT", *attributes, *([] if value is None else [value])]
    nodes = snapshot["documents"][0]["nodes"]
    nodes["attributes"] = [[], [], list(range(first + 1, first + 1 + len(attributes)))]
    if value is not None:
        nodes["inputValue"] = {"index": [2], "value": [first + 1 + len(attributes)]}
    return snapshot


@pytest.mark.parametrize(
    ("snapshot", "field"),
    [
        (with_field(["type", "password", "value", "Zq7-Secret"]), "attributes"),
        (with_field(["autocomplete", "section-a current-password"], "Zq7-Secret"), "inputValue"),
        (with_field(["type", "text", "autocomplete", "cc-number"], "4111111111111111"), "inputValue"),
    ],
    ids=["password-value-attribute", "autocomplete-password", "card-number"],
)
def test_a_dom_snapshot_with_a_credential_fields_value_is_a_400_naming_it(client, media_storage, snapshot, field):
    response = put_blob(client, dom_blob(snapshot))

    assert response.status_code == 400, response.content
    assert [error["field"] for error in response.json()["errors"]] == [f"documents[0].nodes.{field}"]
    assert_nothing_stored(None, media_storage)


def test_a_dom_snapshot_with_a_string_that_is_not_one_is_a_400_not_a_500(client, media_storage):
    snapshot = with_field(["type", "password"], "Zq7-Secret")
    snapshot["strings"][-3] = 5  # "type"

    response = put_blob(client, dom_blob(snapshot))

    assert response.status_code == 400, response.content
    assert [error["field"] for error in response.json()["errors"]] == ["strings"]


@pytest.fixture
def alarm():
    """A hang (quadratic work) fails the test after 120 s instead of blocking the run; linear work takes ~2 s."""

    def expired(*_):
        raise TimeoutError("the check did not finish")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(120)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


def test_a_dom_snapshot_pointing_millions_of_attributes_at_one_long_string_is_checked_in_linear_time(
    client, settings, alarm
):
    snapshot = with_field(["type", "password"], "Zq7-Secret")
    snapshot["strings"][0] = "x" * (2 * 1024 * 1024)
    snapshot["documents"][0]["nodes"]["attributes"][2] += [0, 0] * 1_500_000

    response = put_blob(client, dom_blob(snapshot))

    assert response.status_code == 400, response.content
    assert [error["field"] for error in response.json()["errors"]] == ["documents[0].nodes.inputValue"]


def test_a_dom_snapshot_whose_value_index_is_not_a_number_is_no_500(client):
    snapshot = with_field(["type", "password", "value", "x"], "Zq7-Secret")
    nodes = snapshot["documents"][0]["nodes"]
    nodes["attributes"][2][-1], nodes["inputValue"]["value"] = [9], [[9]]

    assert put_blob(client, dom_blob(snapshot)).status_code == 201
