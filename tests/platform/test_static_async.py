"""The middleware chain runs whole in the ASGI server's event loop, static files included, and Django's own
middleware hooks with it; a session or messages to save still go to a thread (config/middleware.py)."""

import threading
from pathlib import Path
from types import SimpleNamespace

import pytest
from asgiref.sync import async_to_sync, iscoroutinefunction
from django.conf import settings
from django.core.handlers.asgi import ASGIHandler
from django.middleware import clickjacking, common, security
from django.test import AsyncClient
from django.utils.module_loading import import_string

from config.middleware import EventLoopHooks, MessageMiddleware, SessionMiddleware, StaticFilesMiddleware

LIVE_JS = Path(settings.BASE_DIR) / "recorder_extension/lib/live.js"
# The platform's own middleware: the test settings put a counter of their own in front (tests/support/inflight.py).
MIDDLEWARE = [path for path in settings.MIDDLEWARE if not path.startswith("tests.")]


def test_every_middleware_runs_in_the_event_loop():
    """A sync-only middleware anywhere in the chain costs every request two thread hand-overs more."""
    sync_only = [path for path in MIDDLEWARE if not getattr(import_string(path), "async_capable", False)]
    assert sync_only == []
    assert iscoroutinefunction(ASGIHandler()._middleware_chain)


def test_every_django_middleware_calls_its_hooks_in_the_loop():
    """Through ``sync_to_async`` each hook was a thread hand-over: fourteen a request."""
    classes = [import_string(path) for path in MIDDLEWARE]
    assert [cls for cls in classes if cls is not StaticFilesMiddleware and not issubclass(cls, EventLoopHooks)] == []


@pytest.mark.django_db
def test_the_hooks_run_on_the_event_loop_thread(monkeypatch):
    seen = []

    def recorded(hook):
        def run(self, *args):
            seen.append((f"{type(self).__name__}.{hook.__name__}", threading.get_ident()))
            return hook(self, *args)

        return run

    for cls, hook in (
        (security.SecurityMiddleware, "process_request"),
        (common.CommonMiddleware, "process_response"),
        (clickjacking.XFrameOptionsMiddleware, "process_response"),
    ):
        monkeypatch.setattr(cls, hook, recorded(getattr(cls, hook)))

    async def fetch():
        return threading.get_ident(), await AsyncClient().get("/accounts/login/")

    loop_thread, response = async_to_sync(fetch)()
    assert response.status_code == 200
    assert sorted(name for name, _ in seen) == [
        "CommonMiddleware.process_response",
        "SecurityMiddleware.process_request",
        "XFrameOptionsMiddleware.process_response",
    ]
    assert {thread for _, thread in seen} == {loop_thread}


@pytest.mark.django_db
def test_a_sign_in_through_the_async_chain_saves_its_session(owner):
    """The session is modified by the sign-in: saved (a database write) in a thread, and the next request has it."""

    async def sign_in():
        client = AsyncClient()
        await client.get("/accounts/login/")
        csrf = client.cookies["csrftoken"].value
        form = {"username": "owner", "password": "owner-Passw0rd!", "csrfmiddlewaretoken": csrf}
        signed_in = await client.post("/accounts/login/", form)
        home = await client.get("/")
        return signed_in, home

    signed_in, home = async_to_sync(sign_in)()
    assert signed_in.status_code == 302
    assert home.status_code == 200
    assert b"owner" in home.content


def test_only_a_changed_session_or_pending_messages_go_to_a_thread():
    session_mw, messages_mw = SessionMiddleware(lambda r: None), MessageMiddleware(lambda r: None)
    untouched = SimpleNamespace(
        session=SimpleNamespace(modified=False), _messages=SimpleNamespace(used=False, added_new=False)
    )
    changed = SimpleNamespace(
        session=SimpleNamespace(modified=True), _messages=SimpleNamespace(used=False, added_new=True)
    )
    read = SimpleNamespace(_messages=SimpleNamespace(used=True, added_new=False))

    assert not session_mw.response_may_block(untouched, None)
    assert session_mw.response_may_block(changed, None)
    assert not session_mw.response_may_block(SimpleNamespace(), None)  # a request the chain answered early
    assert not messages_mw.response_may_block(untouched, None)
    assert messages_mw.response_may_block(changed, None)
    assert messages_mw.response_may_block(read, None)


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


def test_the_asgi_application_imports_every_view_before_its_first_request(tmp_path):
    """The first request a server process served waited ~0.5 s for the URLconf's imports (views, DRF, serializers)."""
    from tests.support.processes import run_python

    code = "import sys, config.asgi; print(sorted(m for m in ('config.urls', 'api.exports.views') if m in sys.modules))"
    loaded = run_python(code, tmp_path, DEBUG="1")

    assert loaded.returncode == 0, loaded.stderr
    assert loaded.stdout.strip().splitlines()[-1] == "['api.exports.views', 'config.urls']"
