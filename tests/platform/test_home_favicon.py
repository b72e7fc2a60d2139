"""Every page links the favicon, and ``/favicon.ico`` (which browsers ask for anyway) leads to it: no 404."""

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db


def test_the_favicon_is_linked_and_served():
    client = Client()
    page = client.get("/accounts/login/").content.decode()
    assert '<link rel="icon" href="/static/favicon.svg" type="image/svg+xml">' in page
    answer = client.get("/favicon.ico")
    assert answer.status_code == 301
    assert answer["Location"] == "/static/favicon.ico"
    for path, kind in (("/static/favicon.ico", "image/"), ("/static/favicon.svg", "image/svg+xml")):
        served = client.get(path)
        assert served.status_code == 200, path
        assert served["Content-Type"].startswith(kind), path
        assert b"".join(served.streaming_content if served.streaming else [served.content])
