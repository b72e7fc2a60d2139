"""The generated OpenAPI schema and the Swagger UI page, served from local (sidecar) assets."""

import re

import pytest
from rest_framework.test import APIClient

from annotation.actions import BLOB_MEDIA_TYPES
from annotation.lib.schema import INTENTS


@pytest.fixture
def anonymous(db):
    return APIClient()


@pytest.fixture
def openapi(anonymous):
    response = anonymous.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert response.status_code == 200
    return response.json()


def test_the_schema_is_served_as_yaml_by_default_and_names_the_ingest_endpoints(anonymous):
    response = anonymous.get("/api/schema/")

    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/vnd.oai.openapi")
    text = response.content.decode()
    assert text.startswith("openapi: 3")
    assert "/api/recordings/:" in text
    assert "/api/blobs/{sha256}:" in text


def test_the_schema_documents_the_recorder_endpoints_and_methods(openapi):
    paths = openapi["paths"]

    assert {"get", "post"} <= set(paths["/api/recordings/"])
    assert "post" in paths["/api/recordings/{name}/turns/"]
    assert "post" in paths["/api/recordings/{name}/finish/"]
    assert "put" in paths["/api/blobs/{sha256}"]
    assert "post" in paths["/api/auth/token/"]


def test_the_schema_lists_the_allowed_intents_and_blob_media_types(openapi):
    schemas = openapi["components"]["schemas"]
    put = openapi["paths"]["/api/blobs/{sha256}"]["put"]

    assert schemas["TurnInRequest"]["properties"]["intent"]["allOf"] == [{"$ref": "#/components/schemas/IntentEnum"}]
    assert schemas["IntentEnum"]["enum"] == list(INTENTS)
    assert set(put["requestBody"]["content"]) == set(BLOB_MEDIA_TYPES)


def test_the_schema_declares_token_authentication(openapi):
    schemes = openapi["components"]["securitySchemes"]

    assert schemes["tokenAuth"]["type"] == "apiKey"
    assert schemes["tokenAuth"]["in"] == "header"


def test_the_docs_page_is_html_built_from_local_assets_only(anonymous):
    response = anonymous.get("/api/docs/")

    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/html")
    page = response.content.decode()
    assert "swagger-ui" in page
    assert not re.search(r"cdn\.|jsdelivr|unpkg|cdnjs", page)
    assets = re.findall(r'(?:src|href)="([^"]+)"', page)
    assert assets
    local = ("/static/drf_spectacular_sidecar/", "/static/css/", "/api/docs/?script")  # the last two: CSP, no inline
    assert all(url.startswith(local) for url in assets), assets


def test_the_docs_assets_are_served_by_the_app(anonymous):
    page = anonymous.get("/api/docs/").content.decode()
    bundle = re.search(r'src="([^"]+swagger-ui-bundle\.js)"', page).group(1)

    response = anonymous.get(bundle)

    assert response.status_code == 200
    assert b"SwaggerUIBundle" in b"".join(response.streaming_content)
