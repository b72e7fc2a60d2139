"""Content-addressed blob upload: HEAD / PUT, hash and content checks, limits, and no partial writes."""

import io
import os

import pytest

from annotation import actions
from annotation.models import Blob
from tests.support.payloads import MHTML, BlobFile, bboxes_json, jpeg_bytes, page_html, png_bytes, sha
from tests.support.recorder import assert_nothing_stored, blob_url, missing, put_blob, put_raw, stored_files


@pytest.fixture
def client(owner, api_for):
    return api_for(owner)


def webp_bytes() -> bytes:
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (4, 4), (0, 200, 0)).save(buffer, format="WEBP")
    return buffer.getvalue()


def test_head_with_a_malformed_sha256_is_a_bad_request(client):
    assert client.head(blob_url("not-a-sha")).status_code == 400
    assert client.head(blob_url("A" * 64)).status_code == 400


def test_head_says_404_before_upload_and_200_with_size_and_type_after(client):
    blob = BlobFile(png_bytes(), "image/png")
    assert client.head(blob_url(blob.sha256)).status_code == 404

    put = put_blob(client, blob)
    head = client.head(blob_url(blob.sha256))

    assert put.status_code == 201
    assert put.json() == {"sha256": blob.sha256, "size": len(blob.data), "media_type": "image/png"}
    assert head.status_code == 200
    assert (head["X-Blob-Size"], head["X-Blob-Media-Type"]) == (str(len(blob.data)), "image/png")
    assert head["ETag"] == f'"{blob.sha256}"'


@pytest.mark.parametrize(
    ("data", "media_type"),
    [
        pytest.param(png_bytes(), "image/png", id="png"),
        pytest.param(jpeg_bytes(), "image/jpeg", id="jpeg"),
        pytest.param(webp_bytes(), "image/webp", id="webp"),
        pytest.param(page_html(), "text/html", id="html"),
        pytest.param(bboxes_json(), "application/json", id="json"),
        pytest.param(os.urandom(64), "video/webm", id="webm"),
        pytest.param(os.urandom(64), "video/mp4", id="mp4"),
        pytest.param(MHTML, "multipart/related", id="mhtml"),
    ],
)
def test_each_accepted_media_type_is_stored_with_its_bytes(client, media_storage, data, media_type):
    response = put_raw(client, data, media_type, sha(data))

    assert response.status_code == 201, response.content
    blob = Blob.objects.get()
    assert (blob.sha256, blob.size, blob.media_type) == (sha(data), len(data), media_type)
    assert [path.read_bytes() for path in stored_files(media_storage)] == [data]


def test_a_blob_over_the_size_limit_is_refused_with_413(client, media_storage, settings):
    data = png_bytes()
    settings.INGEST_MAX_BLOB_BYTES = len(data) - 1

    response = put_raw(client, data, "image/png", sha(data))

    assert response.status_code == 413
    assert "INGEST_MAX_BLOB_BYTES" in response.json()["detail"]
    assert_nothing_stored(None, media_storage)


def test_a_blob_at_the_size_limit_is_accepted(client, settings):
    data = png_bytes()
    settings.INGEST_MAX_BLOB_BYTES = len(data)

    assert put_raw(client, data, "image/png", sha(data)).status_code == 201


def test_a_streamed_blob_without_length_stops_at_the_size_limit(alpha, media_storage, settings):
    settings.INGEST_MAX_BLOB_BYTES = 1000
    data = os.urandom(1001)

    with pytest.raises(actions.TooLarge, match="INGEST_MAX_BLOB_BYTES"):
        actions.do_store_blob(sha(data), "video/webm", io.BytesIO(data), None, alpha)

    assert_nothing_stored(None, media_storage)


def test_a_body_that_does_not_hash_to_its_address_is_refused(client, media_storage):
    data, other = png_bytes(), png_bytes(color=(1, 2, 3))

    response = put_raw(client, data, "image/png", sha(other))

    assert response.status_code == 400
    assert response.json()["detail"] == f"body hashes to {sha(data)}, not {sha(other)}"
    assert response.json()["errors"] == [{"field": "sha256", "message": "does not match body"}]
    assert_nothing_stored(None, media_storage)


@pytest.mark.parametrize(
    ("data", "media_type", "fragment"),
    [
        pytest.param(png_bytes(64, 64)[:-40], "image/png", "not a decodable image", id="truncated-png"),
        pytest.param(png_bytes(64, 64)[:60], "image/png", "not a decodable image", id="png-header-only"),
        pytest.param(os.urandom(512), "image/png", "not a decodable image", id="random-bytes-as-png"),
        pytest.param(jpeg_bytes(), "image/png", "JPEG image but Content-Type says PNG", id="jpeg-as-png"),
        pytest.param(png_bytes(), "image/jpeg", "PNG image but Content-Type says JPEG", id="png-as-jpeg"),
        pytest.param(page_html(), "image/png", "not a decodable image", id="html-as-png"),
        pytest.param(b'{"a1": {"x": 1,', "application/json", "body is not valid JSON", id="truncated-json"),
        pytest.param(b"<html></html>", "application/json", "body is not valid JSON", id="html-as-json"),
        pytest.param(b'{"a": "\xff"}', "application/json", "body is not valid JSON", id="json-not-utf8"),
        pytest.param(b"<html>\xff\xfe</html>", "text/html", "HTML must be UTF-8", id="html-not-utf8"),
        pytest.param(page_html(), "multipart/related", "not an MHTML archive", id="html-as-mhtml"),
    ],
)
def test_a_body_that_is_not_what_its_content_type_says_is_refused(client, media_storage, data, media_type, fragment):
    response = put_raw(client, data, media_type, sha(data))

    assert response.status_code == 400
    assert fragment in response.json()["detail"]
    assert_nothing_stored(None, media_storage)


@pytest.mark.parametrize("media_type", ["text/plain", "application/octet-stream", "image/gif", "application/pdf"])
def test_an_unsupported_content_type_is_refused_with_415_listing_the_allowed_ones(client, media_storage, media_type):
    data = b"GIF89a" if media_type == "image/gif" else b"some bytes"

    response = put_raw(client, data, media_type, sha(data))

    assert response.status_code == 415
    detail = response.json()["detail"]
    assert media_type in detail
    assert all(allowed in detail for allowed in actions.BLOB_MEDIA_TYPES)
    assert_nothing_stored(None, media_storage)


@pytest.mark.parametrize(
    "address",
    [
        pytest.param("abc123", id="short"),
        pytest.param(sha(b"x").upper(), id="uppercase"),
        pytest.param("g" * 64, id="not-hex"),
        pytest.param(sha(b"x") + "0", id="65-digits"),
    ],
)
def test_an_address_that_is_not_a_sha256_is_refused(client, media_storage, address):
    response = put_raw(client, png_bytes(), "image/png", address)

    assert response.status_code == 400
    assert response.json()["errors"] == [{"field": "sha256", "message": "expected 64 lowercase hex digits"}]
    assert_nothing_stored(None, media_storage)


def test_an_empty_body_is_refused(client, media_storage):
    response = put_raw(client, b"", "image/png", sha(b""))

    assert response.status_code == 400
    assert response.json()["errors"] == [{"field": "body", "message": "empty"}]
    assert_nothing_stored(None, media_storage)


def test_a_refused_upload_leaves_earlier_blobs_alone(client, media_storage):
    good = BlobFile(png_bytes(), "image/png")
    put_blob(client, good)

    response = put_raw(client, b"garbage", "image/png", sha(b"garbage"))

    assert response.status_code == 400
    assert_nothing_stored(None, media_storage, blobs=1)
    assert client.head(blob_url(good.sha256)).status_code == 200


def test_the_same_bytes_under_two_media_types_are_stored_once(client, media_storage):
    data = page_html()
    put_raw(client, data, "text/html", sha(data))

    response = put_raw(client, data, "text/html; charset=utf-8", sha(data))

    assert response.status_code == 200
    assert_nothing_stored(None, media_storage, blobs=1)


def test_missing_lists_only_the_blobs_not_stored_yet_in_the_order_asked(client):
    stored, fresh = BlobFile(png_bytes(), "image/png"), BlobFile(page_html(), "text/html")
    put_blob(client, stored)

    response = missing(client, [fresh.sha256, stored.sha256, fresh.sha256])

    assert response.status_code == 200
    assert response.json() == {"missing": [fresh.sha256]}


def test_missing_names_each_malformed_sha256(client):
    response = missing(client, ["a" * 64, "nope"])

    assert response.status_code == 400
    assert response.json()["errors"] == [{"field": "sha256[1]", "message": "expected 64 lowercase hex digits"}]


def test_missing_refuses_more_than_a_thousand_at_once(client):
    response = missing(client, ["a" * 64] * 1001)

    assert response.status_code == 400
    assert response.json()["errors"][0]["field"] == "sha256"


def test_missing_needs_a_role_that_can_record(reviewer, api_for):
    response = missing(api_for(reviewer), [])

    assert response.status_code == 403


def test_a_head_probe_for_a_missing_blob_is_not_logged_as_a_warning(client, caplog):
    with caplog.at_level("WARNING", logger="django.request"):
        client.head(blob_url("b" * 64))
        client.get("/api/recordings/zzzzzzz/")

    messages = [r.getMessage() for r in caplog.records if r.name == "django.request"]
    assert not any("/api/blobs/" in m for m in messages)


def bilevel_png(width: int, height: int) -> bytes:
    """A PNG declaring ``width`` × ``height`` pixels in a few KiB (one bit per pixel, all white): a small body that
    would cost width × height × 4 bytes once decoded as a screenshot."""
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("1", (width, height), 1).save(buffer, format="PNG", optimize=True)
    return buffer.getvalue()


def test_an_image_over_the_pixel_limit_is_refused_before_decoding(client, media_storage):
    data = bilevel_png(8000, 6000)  # 48 megapixels, over the 40-megapixel default
    assert len(data) < 200 * 1024

    response = put_raw(client, data, "image/png", sha(data))

    assert response.status_code == 400, response.content
    body = response.json()
    assert sha(data) in body["detail"]
    assert "8000 x 6000" in body["detail"]
    assert "INGEST_MAX_IMAGE_PIXELS" in body["detail"]
    assert body["errors"][0]["field"] == "body"
    assert_nothing_stored(None, media_storage)


def test_the_pixel_limit_is_a_setting(client, settings):
    data = png_bytes(64, 64)
    settings.INGEST_MAX_IMAGE_PIXELS = 64 * 64 - 1
    assert put_raw(client, data, "image/png", sha(data)).status_code == 400
    settings.INGEST_MAX_IMAGE_PIXELS = 64 * 64
    assert put_raw(client, data, "image/png", sha(data)).status_code == 201


def test_a_thumbnail_is_not_made_of_an_image_over_the_pixel_limit(db, media_storage):
    from annotation.store.blobstore import has_thumbnail
    from workers.review.thumbnails import make_thumbnails

    small, huge = png_bytes(64, 64), bilevel_png(20000, 10000)  # a legacy blob stored before the limit
    blobs = {sha(small): small, sha(huge): huge}
    assert make_thumbnails([sha(huge), sha(small)], blobs.__getitem__) == 1
    assert has_thumbnail(sha(small))
    assert not has_thumbnail(sha(huge))


@pytest.mark.parametrize(
    ("body", "field", "fragment"),
    [
        pytest.param(b"5", "body", "expected an object {uid: box}, got number", id="a-number"),
        pytest.param(b"[[1, 2], [3]]", "body", "expected an object {uid: box}, got array", id="list-of-lists"),
        pytest.param(b'{"a1": "0,0,1,1"}', "body.a1", "expected a box object", id="box-is-a-string"),
        pytest.param(b'{"a1": {"x": "1", "y": 0, "width": 1, "height": 1}}', "body.a1.x", "expected number", id="str"),
        pytest.param(b'{"a1": {"x": 1, "y": 0, "width": 1}}', "body.a1.height", "required", id="no-height"),
        pytest.param(
            b'{"a1": {"x": 1, "y": 0, "width": 1, "height": 1, "top": null}}', "body.a1.top", "null", id="nul"
        ),
        pytest.param(b'{"a1": {"x": 1e400, "y": 0, "width": 1, "height": 1}}', "body.a1.x", "out of range", id="1e400"),
        pytest.param(b'{"a1": {"x": 0, "y": 1' + b"0" * 400 + b"}}", "body.a1.y", "out of range", id="400-digits"),
        pytest.param(b"[" * 2000 + b"]" * 2000, "body", "nested too deeply", id="nested-2000"),
        pytest.param(b'{"\\ud800": {}}', "body", "lone surrogate", id="lone-surrogate-key"),
    ],
)
def test_a_json_blob_that_is_not_a_bboxes_object_is_refused_naming_the_field(
    client, media_storage, body, field, fragment
):
    response = put_raw(client, body, "application/json", sha(body))

    assert response.status_code == 400, response.content
    errors = response.json()["errors"]
    assert any(e["field"] == field and fragment in e["message"] for e in errors), errors
    assert_nothing_stored(None, media_storage)


def test_a_bboxes_blob_as_the_recorder_sends_it_is_accepted(client):
    data = bboxes_json()
    assert put_raw(client, data, "application/json", sha(data)).status_code == 201


def test_a_bboxes_blob_whose_numbers_only_add_up_past_a_double_is_accepted(client):
    data = b'{"a1": {"x": 1e308, "y": 1e308, "width": 1e308, "height": 1e308}}'
    assert put_raw(client, data, "application/json", sha(data)).status_code == 201
