"""What answers a replay's requests (docs/mind2web.md#replay): the task's HAR entries and, where the HAR lacks a
page, the parts of its MHTML snapshots. Nothing here touches the network or Django.

Matching: method and URL (without its fragment); among the recorded requests for them, the nth request gets the
nth response, a request with a body prefers an entry with the same body, and once all are used the last one is
answered again (a page asking twice). A redirect is answered as recorded (its status and ``Location``), so the
browser follows it to the next request. A request with no entry and no MHTML part is failed (``missing``): it is
never passed to the network."""

import base64
import binascii
import email
import email.policy
import re
from collections import defaultdict
from dataclasses import dataclass
from urllib.parse import urldefrag

# Answer headers that no longer describe the body we hand over (decoded, whole) or that we never send.
DROPPED_HEADERS = frozenset({"content-encoding", "content-length", "transfer-encoding", "set-cookie"})
TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")  # header names Chromium fulfils with (RFC 9110)
BAD_VALUE = re.compile(r"[\r\n\0]")


@dataclass(frozen=True)
class Answer:
    """A response for ``Fetch.fulfillRequest``: status, headers ``[{name, value}]``, body bytes; ``source`` says
    where it came from (``har`` or ``mhtml``)."""

    status: int
    headers: list
    body: bytes
    source: str


def bare(url: str) -> str:
    return urldefrag(url)[0]


def har_answer(entry: dict) -> Answer | None:
    response = entry.get("response") or {}
    status = response.get("status")
    # 0: the recorded request failed; 1xx (a 101 upgrade) or past 599 Chromium cannot be fulfilled with
    if not isinstance(status, int) or not 200 <= status <= 599:
        return None
    headers = [
        {"name": str(h.get("name", "")), "value": str(h.get("value", ""))}
        for h in response.get("headers") or []
        if str(h.get("name", "")).lower() not in DROPPED_HEADERS
        and TOKEN.fullmatch(str(h.get("name", "")))
        and not BAD_VALUE.search(str(h.get("value", "")))
    ]
    location = response.get("redirectURL")
    if 300 <= status < 400 and location and not any(h["name"].lower() == "location" for h in headers):
        headers.append({"name": "Location", "value": location})
    content = response.get("content") or {}
    text = content.get("text") or ""
    body = base64.b64decode(text) if content.get("encoding") == "base64" else text.encode("utf-8")
    if not any(h["name"].lower() == "content-type" for h in headers) and content.get("mimeType"):
        headers.append({"name": "Content-Type", "value": content["mimeType"]})
    return Answer(status, headers, body, "har")


def mhtml_parts(data: bytes) -> dict:
    """``{url: (content type, bytes)}`` of an MHTML snapshot's parts (by their ``Content-Location``)."""
    message = email.message_from_bytes(data, policy=email.policy.default)
    parts = {}
    for part in message.walk():
        location = part.get("Content-Location")
        if part.is_multipart() or not location:
            continue
        content_type = part.get_content_type()
        charset = part.get_content_charset()
        if charset and content_type.startswith("text/"):
            content_type = f"{content_type}; charset={charset}"
        parts.setdefault(bare(str(location)), (content_type, part.get_payload(decode=True) or b""))
    return parts


class Responder:
    """Answers requests from the HAR ``entries`` (in recorded order) and MHTML snapshots (added with
    ``add_mhtml``); records the requests it could not answer in ``missing``."""

    def __init__(self, entries: list):
        self.entries = defaultdict(list)  # (method, url) → entries, recorded order
        for entry in entries:
            request = entry.get("request") or {}
            self.entries[(str(request.get("method", "GET")).upper(), bare(str(request.get("url", ""))))].append(entry)
        self.used = defaultdict(set)
        self.pages = {}  # url → (content type, bytes), from the MHTML snapshots
        self.missing: list[str] = []

    def add_mhtml(self, data: bytes) -> None:
        for url, part in mhtml_parts(data).items():
            self.pages.setdefault(url, part)

    def has_entry(self, method: str, url: str) -> bool:
        return bool(self.entries.get((method.upper(), bare(url))))

    def pick(self, method: str, url: str, body: str | None) -> dict | None:
        key = (method.upper(), bare(url))
        recorded = self.entries.get(key) or []
        if not recorded:
            return None
        unused = [i for i in range(len(recorded)) if i not in self.used[key]]
        same_body = [i for i in unused if body and ((recorded[i]["request"].get("postData") or {}).get("text")) == body]
        index = (same_body or unused or [len(recorded) - 1])[0]
        self.used[key].add(index)
        return recorded[index]

    def answer(self, method: str, url: str, body: str | None = None) -> Answer | None:
        """The answer to a request, or None (recorded in ``missing``): it is to be failed."""
        entry = self.pick(method, url, body)
        try:
            found = har_answer(entry) if entry is not None else None
        except (AttributeError, TypeError, ValueError, binascii.Error):  # a malformed entry (the HAR is uploaded)
            found = None
        if found is None and method.upper() == "GET" and bare(url) in self.pages:
            content_type, data = self.pages[bare(url)]
            found = Answer(200, [{"name": "Content-Type", "value": content_type}], data, "mhtml")
        if found is None:
            self.missing.append(f"{method.upper()} {url}")
        return found
