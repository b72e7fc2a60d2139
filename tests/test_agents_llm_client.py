"""The chat-completions client (``agents.llm``) against the stand-in model server on loopback: answers, usage,
the cache, retries honouring Retry-After, 500s, a hang hitting the timeout, refusals, non-JSON, redirects, the
budget, and the key never in a repr, an error or a log line."""

import logging
import re

import pytest

from agents.llm import (
    Budget,
    BudgetExhausted,
    ChatClient,
    DirectoryCache,
    Endpoint,
    EndpointError,
    cache_key,
    endpoint_problems,
)
from devtools.standin_model import standin_model
from tests.loopback import loopback_server

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


@pytest.mark.parametrize(
    ("behaviour", "reason"),
    [
        ("401", "refused the key (HTTP 401)"),
        ("403", "refused the key (HTTP 403)"),
        ("non-json", "answered something that is not JSON (text/html)"),
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
        with pytest.raises(EndpointError, match="redirected to .*; not followed"):
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
