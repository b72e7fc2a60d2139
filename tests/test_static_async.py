"""The middleware chain runs whole in the ASGI server's event loop, static files included (config/middleware.py)."""

from pathlib import Path

import pytest
from asgiref.sync import async_to_sync, iscoroutinefunction
from django.conf import settings
from django.core.handlers.asgi import ASGIHandler
from django.test import AsyncClient
from django.utils.module_loading import import_string

LIVE_JS = Path(settings.BASE_DIR) / "recorder_extension/lib/live.js"


def test_every_middleware_runs_in_the_event_loop():
    """A sync-only middleware anywhere in the chain costs every request two thread hand-overs more."""
    sync_only = [path for path in settings.MIDDLEWARE if not getattr(import_string(path), "async_capable", False)]
    assert sync_only == []
    assert iscoroutinefunction(ASGIHandler()._middleware_chain)


@pytest.mark.django_db
def test_a_static_file_is_served_by_the_async_chain():
    async def fetch():
        client = AsyncClient()
        served = await client.get("/static/recorder_lib/live.js")
        missing = await client.get("/static/recorder_lib/recorder.js")
        return served, missing.status_code

    served, missing = async_to_sync(fetch)()
    status, content_type, data = served.status_code, served["Content-Type"], b"".join(served.streaming_content)
    assert status == 200
    assert content_type.startswith("text/javascript")
    assert data == LIVE_JS.read_bytes()
    assert missing == 404


@pytest.mark.django_db
def test_a_page_passes_the_async_chain_with_its_headers():
    async def fetch():
        return await AsyncClient().get("/accounts/login/")

    response = async_to_sync(fetch)()
    assert response.status_code == 200
    assert "Content-Security-Policy" in response
    assert response["X-Frame-Options"] == "DENY"
    assert response["X-Content-Type-Options"] == "nosniff"
