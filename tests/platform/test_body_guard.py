"""Bodies are refused before they are read: the real ASGI server (uvicorn, as `make run` starts it) answers 413 for a
declared length over the limit and 401 for an API write without credentials before the client has sent the body,
and stops a chunked body as soon as it passes the limit. Raw sockets, so the test sees what the server really read.
"""

import socket
import time

import pytest
from rest_framework.authtoken.models import Token

from annotation.models import Blob
from tests.support.processes import Upload, limited_server

pytestmark = [pytest.mark.processes, pytest.mark.django_db(transaction=True)]

LIMIT = 1024 * 1024  # the server's INGEST_MAX_BLOB_BYTES in these tests
SHA = "ab" * 32


@pytest.fixture
def server(media_storage, tmp_path):
    limits = {"INGEST_MAX_BLOB_BYTES": LIMIT, "INGEST_MAX_UPLOAD_BYTES": 2 * LIMIT}
    with limited_server(media_storage, tmp_path / "server.log", **limits) as url:
        yield int(url.rsplit(":", 1)[1])


@pytest.fixture
def token(owner):
    return Token.objects.create(user=owner).key


PUT_BLOB = (f"PUT /api/blobs/{SHA} HTTP/1.1", "Content-Type: image/png")
POST_BUNDLE = (
    "POST /api/recordings/any-demo/bundle/ HTTP/1.1",
    "Content-Type: application/x-webtasks-batch",
    "Content-Encoding: gzip",
)
POST_OLD_BATCH = ("POST /api/recordings/any-demo/batch/ HTTP/1.1", *POST_BUNDLE[1:])  # the old path, one release


def put_head(length: str, token: str | None = None, request: tuple = PUT_BLOB) -> str:
    lines = [request[0], "Host: 127.0.0.1", *request[1:], length]
    if token:
        lines.append(f"Authorization: Token {token}")
    return "\r\n".join(lines) + "\r\n"


@pytest.mark.parametrize(
    ("request_lines", "setting"),
    [
        (PUT_BLOB, b"INGEST_MAX_BLOB_BYTES"),
        (POST_BUNDLE, b"INGEST_MAX_UPLOAD_BYTES"),
        (POST_OLD_BATCH, b"INGEST_MAX_UPLOAD_BYTES"),
    ],
)
def test_a_declared_length_over_the_limit_is_a_413_before_the_body_is_sent(server, token, request_lines, setting):
    upload = Upload(server, put_head(f"Content-Length: {2**30}", token, request_lines), total=2**30)

    status, body, sent = upload.answer()

    assert status == 413
    assert setting in body
    assert sent < 64 * 1024 * 1024  # of a GiB: the server answered from the header
    assert not Blob.objects.exists()


def test_an_unauthenticated_bundle_is_a_401_before_its_body_is_received(server):
    total = 300 * 1024 * 1024
    status, body, sent = Upload(server, put_head(f"Content-Length: {total}", None, POST_BUNDLE), total=total).answer()

    assert status == 401
    assert sent < 64 * 1024 * 1024


def test_an_unauthenticated_upload_is_a_401_before_its_body_is_received(server):
    total = 300 * 1024 * 1024
    upload = Upload(server, put_head(f"Content-Length: {total}"), total=total)

    status, body, sent = upload.answer()

    assert status == 401
    assert b"not_authenticated" in body
    assert sent < 64 * 1024 * 1024  # of 300 MB


@pytest.mark.parametrize("credentials", ["Token not-a-token", None])
def test_a_chunked_upload_with_bad_or_no_credentials_is_a_401_at_once(server, credentials):
    head = put_head("Transfer-Encoding: chunked") + (f"Authorization: {credentials}\r\n" if credentials else "")
    status, _, sent = Upload(server, head, total=300 * 1024 * 1024, chunked=True).answer()

    assert status == 401
    assert sent < 64 * 1024 * 1024


def test_a_chunked_body_is_stopped_with_413_as_soon_as_it_passes_the_limit(server, token):
    total = 256 * 1024 * 1024
    upload = Upload(server, put_head("Transfer-Encoding: chunked", token), total=total, chunked=True)

    status, body, sent = upload.answer()

    assert status == 413
    assert b"INGEST_MAX_BLOB_BYTES" in body
    # The server stopped reading at the limit: the client got no further than what the socket buffers hold.
    assert sent < LIMIT + 48 * 1024 * 1024
    assert not Blob.objects.exists()


def test_a_body_within_the_limit_still_reaches_the_view(server, token):
    head = put_head("Content-Length: 5", token)
    sock = socket.create_connection(("127.0.0.1", server), timeout=30)
    sock.sendall(head.encode() + b"\r\nhello")
    deadline, data = time.monotonic() + 30, b""
    while b"\r\n\r\n" not in data and time.monotonic() < deadline:
        data += sock.recv(65536)
    sock.close()

    assert data.split()[1] == b"400"  # the view's own answer: the body does not hash to the address
