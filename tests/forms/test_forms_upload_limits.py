"""A form batch's CSV may be as large as ``FORM_CSV_MAX_BYTES`` says, through the real server (uvicorn, as `make run`
starts it): its body guard gives the two upload routes (``POST /api/batches/``, the web form ``/work/batches/new/``)
the files' limits instead of ``INGEST_MAX_BATCH_BYTES``, and every 413 names the settings that make the limit it
enforced. Scaled down: request bodies capped at 1 MiB, CSVs at 3 MiB, a 2 MiB CSV in between."""

import secrets

import pytest
import requests
from django.test import Client
from rest_framework.authtoken.models import Token

from annotation.models import Batch
from tests.support.forms_data import TEMPLATE
from tests.support.processes import Upload, limited_server

pytestmark = [pytest.mark.processes, pytest.mark.django_db(transaction=True)]

MiB = 1024 * 1024
ROWS = 200


@pytest.fixture
def server(media_storage, tmp_path):
    limits = {"INGEST_MAX_BATCH_BYTES": MiB, "FORM_CSV_MAX_BYTES": 3 * MiB}
    with limited_server(media_storage, tmp_path / "server.log", **limits) as url:
        yield url


def big_csv(size: int) -> bytes:
    """A batch CSV of about ``size`` bytes: ``ROWS`` distinct tasks with long sentences."""
    cell = "x" * (size // ROWS)
    return ("topic,sentence\n" + "".join(f"t{row},{cell}\n" for row in range(ROWS))).encode()


def files(csv: bytes) -> dict:
    return {"template": ("template.html", TEMPLATE.encode()), "csv": ("big.csv", csv)}


def test_a_csv_past_the_request_body_cap_but_within_its_own_limit_is_uploaded_through_the_api(server, researcher):
    token = Token.objects.create(user=researcher).key
    response = requests.post(
        f"{server}/api/batches/",
        data={"project": "alpha", "name": "big"},
        files=files(big_csv(2 * MiB)),
        headers={"Authorization": f"Token {token}"},
        timeout=60,
    )

    assert response.status_code == 201, response.text[:500]
    batch = requests.get(f"{server}/api/batches/{response.json()['id']}/", headers={"Authorization": f"Token {token}"})
    assert batch.json()["tasks_total"] == ROWS


def test_a_csv_past_the_request_body_cap_is_uploaded_through_the_web_form(server, researcher):
    client = Client()
    client.force_login(researcher)
    csrf = secrets.token_hex(16)  # any 32-character token: the cookie and the form field must agree
    cookies = {"sessionid": client.cookies["sessionid"].value, "csrftoken": csrf}
    form = {"csrfmiddlewaretoken": csrf, "project": "alpha", "name": "big-page", "assignments_per_task": "1"}
    form["allotted_minutes"] = "60"
    response = requests.post(
        f"{server}/work/batches/new/", data=form, files=files(big_csv(2 * MiB)), cookies=cookies, timeout=60
    )

    assert response.status_code == 200, response.text[:500]  # followed the redirect to the batch's page
    batch = Batch.objects.get(name="big-page")
    assert response.url.endswith(f"/work/batches/{batch.pk}/")
    assert batch.tasks.count() == ROWS


def test_a_body_over_the_files_limits_is_a_413_naming_them_before_it_is_sent(server, researcher):
    token = Token.objects.create(user=researcher).key
    port = int(server.rsplit(":", 1)[1])
    total = 64 * MiB
    head = (
        "POST /api/batches/ HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: multipart/form-data; boundary=b\r\n"
        f"Authorization: Token {token}\r\nContent-Length: {total}\r\n"
    )

    status, body, sent = Upload(port, head, total=total).answer()

    assert status == 413
    assert b"FORM_TEMPLATE_MAX_BYTES + FORM_CSV_MAX_BYTES" in body
    assert b"INGEST_MAX_BATCH_BYTES" not in body
    assert sent < 32 * MiB


def test_a_csv_over_its_own_limit_is_a_413_naming_the_csv_and_its_setting(server, researcher):
    token = Token.objects.create(user=researcher).key
    response = requests.post(
        f"{server}/api/batches/",
        data={"project": "alpha"},
        files=files(big_csv(3 * MiB + 64 * 1024)),
        headers={"Authorization": f"Token {token}"},
        timeout=60,
    )

    assert response.status_code == 413
    assert response.json()["errors"][0]["field"] == "csv"
    assert "FORM_CSV_MAX_BYTES" in response.json()["detail"]
    assert not Batch.objects.exists()


def test_other_bodies_keep_the_request_body_cap(server, researcher):
    token = Token.objects.create(user=researcher).key
    response = requests.post(
        f"{server}/api/websites/import/",
        data={"project": "alpha"},
        files={"file": ("websites.csv", big_csv(2 * MiB))},
        headers={"Authorization": f"Token {token}"},
        timeout=60,
    )

    assert response.status_code == 413
    assert "INGEST_MAX_BATCH_BYTES" in response.json()["detail"]
