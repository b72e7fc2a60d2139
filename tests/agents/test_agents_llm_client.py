"""The chat-completions client (``agents.llm``) against the stand-in model server on loopback: answers, usage,
the cache, retries honouring Retry-After, 500s, a hang hitting the timeout, refusals, non-JSON, redirects, the
budget, and the key never in a repr, an error or a log line; no ``Authorization`` header without a key; what
answered (a body, a header, bytes that are not HTTP) never quoted in an error; a reply past the cap cut and its call
failed; the address connected to checked when private addresses are not allowed."""

import contextlib
import gzip
import json
import logging
import re
import socket
import threading
import time

import pytest

from agents import llm
from agents.llm import (
    MAX_REPLY_BYTES,
    Budget,
    BudgetExhausted,
    ChatClient,
    DirectoryCache,
    Endpoint,
    EndpointError,
    Stopped,
    cache_key,
    endpoint_problems,
)
from devtools.standin_model import standin_model
from tests.support.loopback import loopback_server
from tests.support.waits import wait_until

KEY = "sk-test-VERY-SECRET-0123456789"
HELLO = [{"role": "user", "content": "Fill the form, please."}]


@pytest.fixture
def model():
    with standin_model(default="text:self.actions.modify_text('q1', 'yes')", retry_after=1, hang_seconds=30) as server:
        yield server


def client_for(server, **options) -> ChatClient:
    endpoint = Endpoint(server.url, "stand-in", KEY, timeout=options.pop("timeout", 5))
    return ChatClient(endpoint, **{"backoff": 0.05, **options})


def test_an_answer_reports_its_tokens_and_the_key_reaches_the_endpoint_only_as_a_bearer(model):
    completion = client_for(model).complete(HELLO)
    assert completion.text == "self.actions.modify_text('q1', 'yes')"
    assert completion.tokens_in > 0
    assert completion.tokens_out > 0
    assert not completion.cached
    sent = model.requests[0]
    assert sent["path"] == "/v1/chat/completions"
    assert sent["authorization"] == f"Bearer {KEY}"
    assert sent["body"]["model"] == "stand-in"
    assert sent["body"]["temperature"] == 0.0


def test_the_cache_answers_again_without_asking(model, tmp_path):
    for cache in ({}, DirectoryCache(tmp_path / "answers")):
        before = model.answered()
        first = client_for(model, cache=cache).complete(HELLO)
        again = client_for(model, cache=cache).complete(HELLO)  # a new client: a resumed run
        assert model.answered() == before + 1
        assert again.cached
        assert again.text == first.text
        assert again.tokens_in == first.tokens_in
    assert len(DirectoryCache(tmp_path / "answers")) == 1


def test_the_cache_key_depends_on_what_decides_the_answer_only():
    base = cache_key("m", HELLO, 0.0, 100)
    assert base == cache_key("m", [dict(HELLO[0])], 0, 100)
    assert (
        len({base, cache_key("n", HELLO, 0.0, 100), cache_key("m", HELLO, 0.5, 100), cache_key("m", HELLO, 0.0, 99)})
        == 4
    )


def test_429_with_retry_after_then_success_waits_what_the_server_asked(model):
    waits = []
    model.script = ["429", "429"]
    completion = client_for(model, sleep=waits.append).complete(HELLO)
    assert completion.text.startswith("self.actions")
    assert waits == [1.0, 1.0]  # Retry-After: 1, not the 0.05 s backoff
    assert model.counts["429"] == 2
    assert model.answered() == 3


def test_a_500_is_asked_again_with_backoff_and_gives_up_with_the_reason(model):
    waits = []
    model.script = ["500"]
    assert client_for(model, sleep=waits.append).complete(HELLO).text
    assert waits == [0.05]
    model.script = ["500"] * 3
    with pytest.raises(EndpointError, match=r"server error \(HTTP 500\), still after 3 tries"):
        client_for(model, retries=2, sleep=waits.append).complete([{"role": "user", "content": "other"}])


def test_a_hang_hits_the_timeout(model):
    model.script = ["hang"]
    with pytest.raises(EndpointError, match="no answer within 1 s, still after 1 tries"):
        client_for(model, timeout=1, retries=0).complete(HELLO)


def stop_when_answered(model, count: int, stop: threading.Event) -> None:
    """Set ``stop`` (from another thread) once the stand-in got ``count`` requests."""

    def watch():
        wait_until(lambda: model.answered() >= count, 30, 0.01, "the request")
        stop.set()

    threading.Thread(target=watch, daemon=True).start()


def test_a_stopped_client_sends_nothing_more_and_tries_nothing_again(model):
    stop = threading.Event()
    model.script = ["hang"]
    client = client_for(model, timeout=1, stop=stop)
    stop_when_answered(model, 1, stop)
    with pytest.raises(Stopped):  # stopped while its request hangs: that try runs out its timeout, none follows
        client.complete(HELLO)
    assert model.answered() == 1
    with pytest.raises(Stopped):  # nothing is sent once stopped
        client.complete([{"role": "user", "content": "other"}])
    assert (model.answered(), client.requests) == (1, 1)
    waiting = client_for(model, stop=threading.Event(), backoff=60)
    model.script = ["500"]
    stop_when_answered(model, 2, waiting.stop)
    started = time.monotonic()
    with pytest.raises(Stopped):  # the wait of 60 s before the next try ends with the stop
        waiting.complete([{"role": "user", "content": "third"}])
    assert time.monotonic() - started < 30
    assert model.answered() == 2


@pytest.mark.parametrize(
    ("behaviour", "reason"),
    [
        ("401", "refused the key (HTTP 401)"),  # its body (which echoes the key) is not quoted
        ("403", "refused the key (HTTP 403)"),
        ("non-json", "answered something that is not JSON (text/html, "),
        ("not-chat", "answered JSON that is not a chat completion"),
    ],
)
def test_an_endpoint_that_cannot_be_used_is_an_error_with_its_reason_and_never_the_key(
    model, behaviour, reason, caplog
):
    model.script = [behaviour]
    caplog.set_level(logging.DEBUG)
    with pytest.raises(EndpointError, match=re.escape(reason)) as raised:
        client_for(model).complete(HELLO)
    assert KEY not in str(raised.value)
    assert KEY not in repr(raised.value)
    assert KEY not in caplog.text
    assert "Incorrect API key" not in str(raised.value)  # never what answered


@pytest.mark.parametrize(
    ("key", "reason", "masked"),
    [
        ("k", "http://h/v1 refused the key (HTTP 401)", "http://h/v1 refused the key (HTTP 401)"),
        ("k", "the endpoint http://h/k/v1 refused the key", "the endpoint http://h/[key]/v1 refused the key"),
        ("sk-abc", "http://h/v1?api_key=sk-abc failed", "http://h/v1?api_key=[key] failed"),
        ("sk-abc", "http://h/sk-abcd/v1", "http://h/sk-abcd/v1"),  # another token that merely starts with it
    ],
)
def test_the_key_is_masked_as_a_whole_token_so_a_short_key_leaves_words_whole(key, reason, masked):
    with standin_model() as stand_in:
        client = ChatClient(Endpoint(stand_in.url, "m", key), retries=0)
        stand_in.script = ["401"]
        with pytest.raises(EndpointError) as raised:
            client.complete(HELLO)
    assert "refused the key (HTTP 401)" in str(raised.value)
    assert llm._redacted(reason, key) == masked


def test_an_unreachable_endpoint_is_an_error(model):
    with standin_model() as gone:
        url = gone.url
    with pytest.raises(EndpointError, match="cannot reach the endpoint .*refused"):
        ChatClient(Endpoint(url, "m", KEY, timeout=5)).complete(HELLO)


def test_a_redirect_is_never_followed_so_the_key_stays_with_its_host(model):
    def redirect(request):
        return 307, {"Location": f"{model.url}/chat/completions"}, b""

    with loopback_server(redirect) as elsewhere:
        client = ChatClient(Endpoint(f"{elsewhere.url}/v1", "m", KEY, timeout=5))
        with pytest.raises(EndpointError, match=r"answered with a redirect \(HTTP 307\), not followed"):
            client.complete(HELLO)
    assert model.answered() == 0


def test_the_budget_stops_before_the_request_that_would_pass_it(model):
    client = client_for(model, budget=Budget(max_requests=2))
    client.complete([{"role": "user", "content": "one"}])
    client.complete([{"role": "user", "content": "two"}])
    with pytest.raises(BudgetExhausted, match="2 model requests"):
        client.complete([{"role": "user", "content": "three"}])
    assert model.answered() == 2


def test_the_key_is_never_in_a_repr():
    endpoint = Endpoint("http://127.0.0.1:1/v1", "m", KEY)
    assert KEY not in repr(endpoint)
    assert KEY not in repr(ChatClient(endpoint))


def test_bad_settings_name_the_setting():
    good = Endpoint("http://127.0.0.1:1/v1", "m", KEY)
    assert endpoint_problems(good) == {}
    with pytest.raises(ValueError, match="^url: expected an http"):
        Endpoint("ftp://example.org/v1", "m")
    with pytest.raises(ValueError, match="^temperature"):
        Endpoint("http://127.0.0.1:1/v1", "m", temperature=3)
    with pytest.raises(ValueError, match="^max_tokens"):
        Endpoint("http://127.0.0.1:1/v1", "m", max_tokens=0)


def test_an_endpoint_without_a_key_gets_no_authorization_header(model):
    ChatClient(Endpoint(model.url, "stand-in", "", timeout=5)).complete(HELLO)
    ChatClient(Endpoint(model.url, "stand-in", KEY, timeout=5)).complete([{"role": "user", "content": "two"}])
    assert [request["authorization"] for request in model.requests] == [None, f"Bearer {KEY}"]


SECRET = "INTERNAL-PAGE-SECRET-31337"
CHAT = {"choices": [{"message": {"role": "assistant", "content": "ok"}}], "usage": {}}


@pytest.mark.parametrize(
    ("status", "headers", "body", "reason"),
    [
        (400, {"Content-Type": "application/json"}, json.dumps({"error": {"message": SECRET}}), "(HTTP 400)"),
        (401, {"Content-Type": "text/plain"}, SECRET, "refused the key (HTTP 401)"),
        (403, {"Content-Type": "text/html"}, f"<h1>{SECRET}</h1>", "refused the key (HTTP 403)"),
        (404, {"Content-Type": "text/html"}, f"<title>{SECRET}</title>", "refused the request (HTTP 404)"),
        (500, {"Content-Type": "text/plain"}, SECRET, "server error (HTTP 500), still after 1 tries"),
        (200, {"Content-Type": "text/html"}, f"<html>{SECRET}</html>", "not JSON (text/html, "),
        (200, {"Content-Type": f"{SECRET}/x; q={SECRET}"}, SECRET, "not JSON (another media type, "),
        (200, {"Content-Type": f"text/{SECRET}"}, SECRET, "not JSON (another media type, "),
        (200, {"Content-Type": "application/json"}, json.dumps({"page": SECRET}), "not a chat completion"),
        (200, {"Content-Type": "application/json"}, json.dumps([SECRET]), "not a chat completion"),
        (302, {"Location": f"http://{SECRET}.example/"}, SECRET, "redirect (HTTP 302), not followed"),
    ],
)
def test_what_answered_is_never_quoted_in_the_error(status, headers, body, reason, caplog):
    """A model endpoint's URL is its user's choice: the error says the status or the kind of failure, never the
    body, a header or anything else the other side sent (an internal page's content, a service's banner)."""
    caplog.set_level(logging.DEBUG, logger="agents")
    answer = (status, headers, body.encode())
    with loopback_server(lambda request: answer) as server, pytest.raises(EndpointError) as raised:
        ChatClient(Endpoint(f"{server.url}/v1", "m", KEY, timeout=5), retries=0).complete(HELLO)
    assert reason in raised.value.reason
    assert SECRET.lower() not in raised.value.reason.lower()
    assert SECRET not in caplog.text
    assert len(server.requests) == 1


def read_request(connection) -> bytes:
    """The whole request, its head and its Content-Length body. Closing with any of it unread makes the kernel
    reset the connection, and the client may then see the reset before what was sent."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = connection.recv(65536)
        if not chunk:
            return data
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(
        (int(line.split(b":", 1)[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")),
        0,
    )
    while len(body) < length:
        chunk = connection.recv(65536)
        if not chunk:
            break
        body += chunk
    return head + b"\r\n\r\n" + body


@contextlib.contextmanager
def raw_server(send):
    """A TCP server on a free loopback port answering each connection with ``send(connection)`` (not necessarily
    HTTP); yields ``(url, outcome)``: ``outcome`` gets ``"sent"`` or ``"cut"`` (the peer stopped reading)."""
    listener = socket.create_server(("127.0.0.1", 0))
    outcome = []

    def serve():
        with contextlib.suppress(OSError):
            while True:
                connection, _ = listener.accept()
                with connection:
                    read_request(connection)
                    try:
                        send(connection)
                        outcome.append("sent")
                    except OSError:
                        outcome.append("cut")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/v1", outcome
    finally:
        listener.close()
        thread.join(timeout=30)


def test_bytes_that_are_not_http_are_a_kind_of_failure_never_quoted():
    banner = f"SSH-2.0-OpenSSH_{SECRET}\r\n".encode()
    with raw_server(lambda c: c.sendall(banner)) as (url, _), pytest.raises(EndpointError) as raised:
        ChatClient(Endpoint(url, "m", KEY, timeout=5)).complete(HELLO)
    assert raised.value.reason.endswith("what answered does not speak HTTP")
    assert SECRET not in raised.value.reason


def test_a_reply_past_the_cap_is_cut_there_and_fails_its_call():
    """No Content-Length, the body until the connection closes: the client stops reading past the cap (the server
    cannot send the rest) and the call fails saying so."""
    cap = 64 * 1024
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n"
    body = b'{"choices": [{"message": {"content": "' + b"x" * (64 * 1024 * 1024) + b'"}}]}'
    with raw_server(lambda c: c.sendall(head + body)) as (url, outcome), pytest.raises(EndpointError) as raised:
        ChatClient(Endpoint(url, "m", KEY, timeout=30, max_reply_bytes=cap)).complete(HELLO)
    assert raised.value.reason.endswith(f"sent a reply larger than {cap} bytes, the most read; reading stopped")
    assert outcome == ["cut"]


def test_a_declared_length_past_the_cap_is_refused_before_reading():
    """The server declares 50 MB and sends only the head, then waits: a client reading the body would wait for its
    timeout; it refuses at once instead."""
    release = threading.Event()

    def head_only(connection):
        connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 50000000\r\n\r\n")
        release.wait(60)

    with raw_server(head_only) as (url, _):
        try:
            with pytest.raises(EndpointError, match=f"larger than {MAX_REPLY_BYTES} bytes"):
                ChatClient(Endpoint(url, "m", KEY, timeout=120)).complete(HELLO)
        finally:
            release.set()


def test_a_compressed_reply_is_refused_since_its_size_could_not_be_capped():
    packed = gzip.compress(json.dumps(CHAT).encode())
    refused = pytest.raises(EndpointError, match="compressed although an uncompressed one was asked for")
    with loopback_server(lambda request: (200, {"Content-Encoding": "gzip"}, packed)) as server, refused:
        ChatClient(Endpoint(f"{server.url}/v1", "m", KEY, timeout=5)).complete(HELLO)
    assert server.requests[0].headers["Accept-Encoding"] == "identity"


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "[::ffff:127.0.0.1]", "2130706433"])
def test_without_private_addresses_the_address_connected_to_is_checked_and_nothing_is_sent(model, host):
    url = model.url.replace("127.0.0.1", host)
    client = ChatClient(Endpoint(url, "stand-in", KEY, timeout=5, allow_private=False))
    with pytest.raises(EndpointError) as raised:
        client.complete(HELLO)
    assert "was not contacted: its host is or resolves to a loopback address" in raised.value.reason
    assert model.answered() == 0
    assert ChatClient(Endpoint(url, "stand-in", KEY, timeout=5)).complete(HELLO).text  # allowed: it is there


@pytest.mark.parametrize(
    ("usage", "counted"),
    [
        ({"prompt_tokens": -1e12, "completion_tokens": 1e18}, (0, 0)),
        ({"prompt_tokens": 10**18, "completion_tokens": -5}, (0, 0)),
        ({"prompt_tokens": True, "completion_tokens": "12"}, (0, 0)),
        ({"prompt_tokens": 12.0, "completion_tokens": 10**9 + 1}, (0, 0)),
        ({"prompt_tokens": 10**9, "completion_tokens": 7}, (10**9, 7)),
        ("lots", (0, 0)),
    ],
)
def test_a_token_count_that_is_not_a_whole_number_up_to_the_bound_counts_as_unknown(usage, counted):
    """Hostile usage figures neither overflow a stored count nor spend the budget; the answer is used."""
    body = json.dumps({**CHAT, "usage": usage}).encode()
    with loopback_server(lambda request: (200, {"Content-Type": "application/json"}, body)) as server:
        client = ChatClient(Endpoint(f"{server.url}/v1", "m", KEY, timeout=5), budget=Budget(max_tokens=10**10))
        completion = client.complete(HELLO)
    assert completion.text == "ok"
    assert (completion.tokens_in, completion.tokens_out) == counted
    assert client.budget.tokens == sum(counted)
    assert llm.MAX_USAGE_TOKENS == 10**9


def test_a_cached_answer_with_hostile_counts_counts_them_as_unknown(model):
    cache = {}
    client = client_for(model, cache=cache)
    client.complete(HELLO)
    (stored,) = cache.values()
    stored.update(tokens_in=10**18, tokens_out=-3)
    again = client_for(model, cache=cache).complete(HELLO)
    assert again.cached
    assert (again.tokens_in, again.tokens_out) == (0, 0)
