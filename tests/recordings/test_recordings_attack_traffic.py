"""Step mode's raw dump under attack (issue 39 review): what a hand-made HAR or DOM snapshot uploaded with an
annotator's token must not get past the server with (the recorder is not the only client)."""

import pytest

from tests.support.rawdump import changed, har, har_blob, har_entry
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
