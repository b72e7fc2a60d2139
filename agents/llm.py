"""A client for any OpenAI-compatible chat-completions endpoint (a local vLLM or llama.cpp server, a hosted API),
built on the ``openai`` package, for runs that last: importable without Django.

- ``Endpoint``: where and how to ask (URL, model, key, temperature, max tokens, timeout, requests in flight, whether
  it may reach a non-global address, the most bytes of a reply read). The key never appears in its ``repr``, in an
  exception or in a log line; with no key no ``Authorization`` header is sent.
- ``ChatClient.complete(messages)`` → ``Completion(text, tokens_in, tokens_out, seconds, cached)``. It retries 429
  and 5xx answers and timeouts with exponential backoff, honouring ``Retry-After``; it never follows a redirect
  (the key stays with its host); at most ``in_flight`` requests are open at once (one client is shared by the
  threads of a run). Once its ``stop`` event is set (a cancelled run) it sends nothing more: no request starts and
  no try follows (``Stopped``); a request in flight runs out its timeout.
- ``Budget``: at most so many requests and/or tokens per run; the request that would pass it raises
  ``BudgetExhausted`` before anything is sent, so a run stops cleanly.
- The answer cache: a dict-like object (``get`` and ``__setitem__``, e.g. a dict, ``DirectoryCache``, or the
  platform's rows) keyed by ``cache_key(model, messages, temperature, max_tokens)``; an answer found there is
  returned without asking the model (``cached=True``) and costs no budget, so a resumed run never asks again.
- Every answer's text is **redacted** of the endpoint's key (``redact_answer``: the key, so ``Bearer <key>`` too,
  becomes ``[key]``) and **cut** at ``MAX_ANSWER_CHARS`` (``cut_answer``) before it is returned or cached, so
  nothing downstream (calls, page values, errors, stored answers, predictions) holds more or holds the key.
- ``EndpointError(reason)``: the endpoint cannot be used (unreachable, an address it may not reach, an answer that
  is not JSON or not a chat completion, a reply larger than the cap, a refused key, another refusal, still failing
  after the retries); the run stops with ``reason``. A reason says the status or the kind of failure and never
  quotes what answered (its body, headers or bytes): a model endpoint's URL is chosen by its user, so what answers
  there may be a page or a service they could not otherwise read (``agents.netguard``).

See ``docs/agents.md`` ("The llm solver").
"""

from __future__ import annotations

import email.utils
import hashlib
import json
import logging
import os
import socket
import ssl
import threading
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import httpx2

from . import lazy, netguard
from .answers import cut_answer, redact_answer
from .answers import redact_token as _redacted

log = logging.getLogger(__name__)

MAX_TOKENS_LIMIT = 1_000_000
MAX_TEMPERATURE = 2.0
MAX_IN_FLIGHT = 64
MAX_RETRY_AFTER = 120.0  # seconds: a longer Retry-After is waited for this long, then asked again
MAX_REPLY_BYTES = 4 * 1024 * 1024  # the most of a reply read, unless the endpoint says otherwise
MAX_REPLY_BYTES_LIMIT = 256 * 1024 * 1024
MAX_USAGE_TOKENS = 10**9  # the most tokens one answer may report (in or out); past it the figure is unknown (0)


class EndpointError(Exception):
    """The endpoint cannot be used; ``reason`` says why (never holding the key)."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


class BudgetExhausted(Exception):
    """The run's budget of requests or tokens is spent: the run stops cleanly with what it has."""


class Stopped(Exception):
    """The run is stopping (the client's ``stop`` is set): no request is sent and no try is made again."""


def check_url(url) -> str | None:
    """What is wrong with ``url`` as an endpoint (None when it is an http(s) URL with a host)."""
    if not isinstance(url, str) or not url:
        return "expected the endpoint's base URL, e.g. http://127.0.0.1:8000/v1"
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:  # e.g. an unclosed IPv6 bracket: "http://[::1/v1"
        return "expected an http:// or https:// URL with a host (this one cannot be read as a URL)"
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return "expected an http:// or https:// URL with a host"
    if parts.username or parts.password:
        return "put the key in the key setting, not in the URL"
    try:
        parts.port  # noqa: B018 - urllib checks the port when it is read
    except ValueError:
        return "the port must be a number from 0 to 65535"
    return None


@dataclass(frozen=True)
class Endpoint:
    """An OpenAI-compatible endpoint and the sampling settings of a run. ``url`` is the base URL (``.../v1``: the
    client posts to ``url + /chat/completions``). The key is left out of ``repr``."""

    url: str
    model: str
    key: str = field(default="", repr=False)
    temperature: float = 0.0
    max_tokens: int = 1024
    timeout: float = 60.0
    in_flight: int = 1
    allow_private: bool = True  # False: a loopback, private, link-local, ... address is refused when connecting
    max_reply_bytes: int = MAX_REPLY_BYTES

    def __post_init__(self):
        problems = endpoint_problems(self)
        if problems:
            name, message = next(iter(problems.items()))
            raise ValueError(f"{name}: {message}")


def endpoint_problems(endpoint: Endpoint) -> dict[str, str]:
    """``{setting: what is wrong}`` for every bad setting (empty when all are fine)."""
    problems = {}
    if message := check_url(endpoint.url):
        problems["url"] = message
    if not isinstance(endpoint.model, str) or not endpoint.model.strip():
        problems["model"] = "expected the model's name"
    number = (int, float)
    if not isinstance(endpoint.temperature, number) or not 0 <= endpoint.temperature <= MAX_TEMPERATURE:
        problems["temperature"] = f"expected a number from 0 to {MAX_TEMPERATURE}"
    if not isinstance(endpoint.max_tokens, int) or not 1 <= endpoint.max_tokens <= MAX_TOKENS_LIMIT:
        problems["max_tokens"] = f"expected a whole number from 1 to {MAX_TOKENS_LIMIT}"
    if not isinstance(endpoint.timeout, number) or not 0 < endpoint.timeout <= 3600:
        problems["timeout"] = "expected seconds, more than 0 and at most 3600"
    if not isinstance(endpoint.in_flight, int) or not 1 <= endpoint.in_flight <= MAX_IN_FLIGHT:
        problems["in_flight"] = f"expected a whole number from 1 to {MAX_IN_FLIGHT}"
    reply = getattr(endpoint, "max_reply_bytes", MAX_REPLY_BYTES)
    if isinstance(reply, bool) or not isinstance(reply, int) or not 1 <= reply <= MAX_REPLY_BYTES_LIMIT:
        problems["max_reply_bytes"] = f"expected a whole number of bytes from 1 to {MAX_REPLY_BYTES_LIMIT}"
    return problems


@dataclass
class Completion:
    """One answer: its text, the tokens the endpoint reported, the seconds it took (all tries), and whether it
    came from the cache (then nothing was asked; tokens and seconds are those of the original answer)."""

    text: str
    tokens_in: int = 0
    tokens_out: int = 0
    seconds: float = 0.0
    cached: bool = False

    def as_dict(self) -> dict:
        return {"text": self.text, "tokens_in": self.tokens_in, "tokens_out": self.tokens_out, "seconds": self.seconds}


def cache_key(model: str, messages: list[dict], temperature: float, max_tokens: int) -> str:
    """The answer cache's key: a SHA-256 of what decides the answer (never the key or the URL)."""
    blob = json.dumps([model, messages, float(temperature), int(max_tokens)], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class DirectoryCache:
    """An answer cache in a folder: one ``<key>.json`` per answer, written atomically (rename)."""

    def __init__(self, folder):
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)

    def get(self, key: str, default=None):
        try:
            return json.loads((self.folder / f"{key}.json").read_text(encoding="utf-8"))
        except (FileNotFoundError, ValueError):
            return default

    def __setitem__(self, key: str, value: dict) -> None:
        temporary = self.folder / f".{key}.{threading.get_ident()}.tmp"
        temporary.write_text(json.dumps(value), encoding="utf-8")
        temporary.replace(self.folder / f"{key}.json")

    def __contains__(self, key: str) -> bool:
        return (self.folder / f"{key}.json").exists()

    def __len__(self) -> int:
        return sum(1 for _ in self.folder.glob("*.json"))


class Budget:
    """At most ``max_requests`` requests and ``max_tokens`` tokens (in + out) for a run; None: no limit.
    ``requests``/``tokens`` start from what a resumed run already spent. Thread-safe."""

    def __init__(self, max_requests: int | None = None, max_tokens: int | None = None, requests=0, tokens=0):
        self.max_requests, self.max_tokens = max_requests, max_tokens
        self.requests, self.tokens = requests, tokens
        self._lock = threading.Lock()

    def take_request(self) -> None:
        """Count one request, or raise ``BudgetExhausted`` when none is left."""
        with self._lock:
            if self.max_requests is not None and self.requests >= self.max_requests:
                raise BudgetExhausted(f"the budget of {self.max_requests} model requests is spent")
            if self.max_tokens is not None and self.tokens >= self.max_tokens:
                raise BudgetExhausted(f"the budget of {self.max_tokens} tokens is spent ({self.tokens} used)")
            self.requests += 1

    def spend(self, tokens: int) -> None:
        with self._lock:
            self.tokens += tokens


def retry_after(headers, now: float | None = None) -> float | None:
    """Seconds to wait from ``Retry-After`` (seconds or an HTTP date) or ``retry-after-ms``; None when absent."""
    if headers is None:
        return None
    milliseconds = headers.get("retry-after-ms")
    if milliseconds:
        try:
            return max(0.0, float(milliseconds) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


class _Redirected(Exception):
    def __init__(self, status: int):
        super().__init__(f"answered with a redirect (HTTP {status}), not followed: the key stays with its host")
        self.status = status


def _refuse_redirects(response) -> None:
    if 300 <= response.status_code < 400:
        raise _Redirected(response.status_code)


def _drop_authorization(request) -> None:
    """An endpoint without a key gets no ``Authorization`` header at all (not even an empty or placeholder one)."""
    request.headers.pop("Authorization", None)


# Media types a reply is named by in an error; any other is "another media type" (the header is the other side's
# text, which an error never quotes).
KNOWN_MEDIA_TYPES = frozenset(
    (
        "application/json",
        "application/problem+json",
        "application/octet-stream",
        "application/xml",
        "application/xhtml+xml",
        "application/x-ndjson",
        "text/event-stream",
        "text/html",
        "text/plain",
        "text/xml",
    )
)


def _media_type(response) -> str:
    """The reply's media type when it is a well-known one (``text/html``), never other text the header holds."""
    given = response.headers.get("content-type", "").split(";")[0].strip().lower()
    if not given:
        return "no media type"
    return given if given in KNOWN_MEDIA_TYPES else "another media type"


def _causes(error: BaseException | None) -> list[BaseException]:
    """``error`` and its causes (the openai client wraps httpx's errors, which wrap httpcore's and the socket's)."""
    chain = []
    while error is not None and len(chain) < 20:
        chain.append(error)
        error = error.__cause__ or error.__context__
    return chain


def _request_failure(where: str, error: BaseException) -> str:
    """Why a request got no usable HTTP answer, by kind (never what the other side sent)."""
    chain = _causes(error)
    for cause in chain:
        if isinstance(cause, netguard.AddressRefused):
            return (
                f"the endpoint {where} was not contacted: its host is or resolves to {cause.kind}, which model "
                "endpoints may not reach here"
            )
        if isinstance(cause, netguard.ReplyTooLarge):
            return f"the endpoint {where} sent a reply larger than {cause.cap} bytes, the most read; reading stopped"
        if isinstance(cause, netguard.ReplyRefused):
            return f"the endpoint {where} answered, but {cause}"
        if isinstance(cause, (netguard.Unresolvable, socket.gaierror)):
            return f"cannot reach the endpoint {where}: its host name does not resolve"
    return f"cannot reach the endpoint {where}: {_connection_kind(chain)}"


def _connection_kind(chain: list[BaseException]) -> str:
    for cause in chain:
        if isinstance(cause, ssl.SSLError):
            return f"TLS failed ({cause.reason or type(cause).__name__})"
        if isinstance(cause, (httpx2.RemoteProtocolError, httpx2.LocalProtocolError)):
            return "what answered does not speak HTTP"
        if isinstance(cause, OSError) and cause.errno and cause.errno > 0:
            return os.strerror(cause.errno).lower()
    for cause in chain:
        if isinstance(cause, httpx2.ConnectError):
            return "the connection failed"
        if isinstance(cause, (httpx2.ReadError, httpx2.WriteError)):
            return "the connection broke"
    return f"the request failed ({type(chain[-1]).__name__})"


class _Retry(Exception):
    def __init__(self, reason: str, wait: float | None = None):
        super().__init__(reason)
        self.reason, self.wait = reason, wait


class ChatClient:
    """Asks ``endpoint`` for chat completions (see the module docstring). ``retries``: how many times a 429, 5xx
    or timeout is asked again, waiting ``backoff * 2**n`` seconds (at most ``max_backoff``) or what the answer's
    ``Retry-After`` says. ``sleep`` is the waiting function (``time.sleep``; a cancellable wait in a job). Once
    ``stop`` (an event) is set, no request starts and no try follows one that failed: ``Stopped``; a wait between
    tries ends at once."""

    def __init__(
        self,
        endpoint: Endpoint,
        *,
        cache=None,
        budget: Budget | None = None,
        retries: int = 4,
        backoff: float = 1.0,
        max_backoff: float = 30.0,
        sleep: Callable[[float], None] = time.sleep,
        stop: threading.Event | None = None,
    ):
        self.endpoint, self.stop = endpoint, stop
        self.cache = cache
        self.budget = budget or Budget()
        self.retries, self.backoff, self.max_backoff, self.sleep = retries, backoff, max_backoff, sleep
        self._slots = threading.BoundedSemaphore(endpoint.in_flight)
        self._lock = threading.Lock()
        self.requests = 0  # HTTP requests sent (retries included)
        self.answers = 0  # answers from the endpoint
        self.cache_hits = 0
        hooks = {"response": [_refuse_redirects], "request": [] if endpoint.key else [_drop_authorization]}
        transport = netguard.GuardedTransport(
            allow_private=endpoint.allow_private, max_reply_bytes=endpoint.max_reply_bytes
        )
        openai = lazy.load("openai")  # a second of a process's start, for model runs only (agents.lazy)
        self._http = openai.DefaultHttpxClient(
            transport=transport, event_hooks=hooks, headers={"Accept-Encoding": "identity"}
        )
        self._client = openai.OpenAI(
            base_url=endpoint.url.rstrip("/"),
            api_key=endpoint.key or "none",
            timeout=endpoint.timeout,
            max_retries=0,
            http_client=self._http,
        )

    def __repr__(self) -> str:
        return f"ChatClient({self.endpoint!r})"

    def close(self) -> None:
        self._client.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def key_for(self, messages: list[dict]) -> str:
        e = self.endpoint
        return cache_key(e.model, messages, e.temperature, e.max_tokens)

    def complete(self, messages: list[dict]) -> Completion:
        """The model's answer to ``messages``: from the cache when it holds it, else asked (with retries)."""
        key = self.key_for(messages)
        if self.cache is not None:
            stored = self.cache.get(key)
            if stored is not None:
                with self._lock:
                    self.cache_hits += 1
                return Completion(
                    self._kept(stored["text"]),
                    _count(stored.get("tokens_in", 0)),
                    _count(stored.get("tokens_out", 0)),
                    stored.get("seconds", 0.0),
                    True,
                )
        self._check_stop()
        self.budget.take_request()
        started = time.perf_counter()
        try:
            completion = self._ask_with_retries(messages)
        except EndpointError as error:  # the key masked in every reason, whatever the reason holds
            raise EndpointError(_redacted(error.reason, self.endpoint.key)) from None
        completion.seconds = time.perf_counter() - started
        completion.text = self._kept(completion.text)
        self.budget.spend(completion.tokens_in + completion.tokens_out)
        if self.cache is not None:
            self.cache[key] = completion.as_dict()
        return completion

    def _kept(self, text: str) -> str:
        """An answer's text as it is used and stored: the key masked, then cut at ``MAX_ANSWER_CHARS``."""
        return cut_answer(redact_answer(text, self.endpoint.key))

    def _ask_with_retries(self, messages: list[dict]) -> Completion:
        attempt = 0
        while True:
            try:
                with self._slots:
                    self._check_stop()  # also after waiting for a slot
                    return self._ask(messages)
            except _Retry as retry:
                self._check_stop()  # a stopping run's request that ran out its timeout is not asked again
                if attempt >= self.retries:
                    raise EndpointError(f"{retry.reason}, still after {attempt + 1} tries") from None
                wait = retry.wait
                if wait is None:
                    wait = min(self.max_backoff, self.backoff * 2**attempt)
                wait = min(wait, MAX_RETRY_AFTER)
                log.info("model endpoint %s: %s; asking again in %.1f s", self._where(), retry.reason, wait)
                attempt += 1
                self._wait(wait)

    def _check_stop(self) -> None:
        if self.stop is not None and self.stop.is_set():
            raise Stopped("the run is stopping: no more model requests")

    def _wait(self, seconds: float) -> None:
        """The wait before another try; a set ``stop`` ends it (and the tries) at once."""
        if self.stop is not None and self.sleep is time.sleep:
            self.stop.wait(seconds)
        else:
            self.sleep(seconds)
        self._check_stop()

    def _where(self) -> str:
        parts = urllib.parse.urlsplit(self.endpoint.url)
        return f"{parts.scheme}://{parts.netloc}{parts.path}"

    def _ask(self, messages: list[dict]) -> Completion:
        openai = lazy.load("openai")
        e, where = self.endpoint, self._where()
        with self._lock:
            self.requests += 1
        try:
            raw = self._client.chat.completions.with_raw_response.create(
                model=e.model, messages=messages, temperature=e.temperature, max_tokens=e.max_tokens
            )
        except _Redirected as redirected:
            raise EndpointError(f"the endpoint {where} {redirected}") from None
        except openai.APITimeoutError:
            raise _Retry(f"no answer within {e.timeout:g} s") from None
        except openai.APIStatusError as error:
            status = error.status_code
            if status == 429:
                raise _Retry("rate limited (HTTP 429)", retry_after(error.response.headers)) from None
            if status >= 500:
                raise _Retry(f"server error (HTTP {status})", retry_after(error.response.headers)) from None
            if status in (401, 403):
                raise EndpointError(f"the endpoint {where} refused the key (HTTP {status})") from None
            raise EndpointError(f"the endpoint {where} refused the request (HTTP {status})") from None
        except openai.APIConnectionError as error:
            redirected = _in_chain(error, _Redirected)
            if redirected is not None:
                raise EndpointError(f"the endpoint {where} {redirected}") from None
            raise EndpointError(_request_failure(where, error)) from None
        return self._parse(raw)

    def _parse(self, raw) -> Completion:
        where = self._where()
        response = raw.http_response
        try:
            body = json.loads(response.content)
        except ValueError:
            raise EndpointError(
                f"the endpoint {where} answered something that is not JSON ({_media_type(response)}, "
                f"{len(response.content)} bytes)"
            ) from None
        try:
            text = body["choices"][0]["message"]["content"]
            if text is None:
                text = ""
            if not isinstance(text, str):
                raise TypeError
        except (KeyError, IndexError, TypeError):
            raise EndpointError(
                f"the endpoint {where} answered JSON that is not a chat completion (no text at "
                "choices[0].message.content)"
            ) from None
        usage = body.get("usage") if isinstance(body.get("usage"), dict) else {}
        with self._lock:
            self.answers += 1
        return Completion(text, _count(usage.get("prompt_tokens")), _count(usage.get("completion_tokens")))


def _in_chain(error: BaseException, kind: type):
    """The first exception of type ``kind`` among ``error``'s causes, or None."""
    return next((cause for cause in _causes(error) if isinstance(cause, kind)), None)


def _count(value) -> int:
    """A token count the endpoint reported, if it is a whole number from 0 to ``MAX_USAGE_TOKENS``; anything else
    (negative, a float, a bool, a string, absurdly large) is unknown and counts 0, so a hostile figure can neither
    overflow a stored count nor spend the budget."""
    return value if type(value) is int and 0 <= value <= MAX_USAGE_TOKENS else 0
