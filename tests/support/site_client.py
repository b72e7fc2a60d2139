"""A plain HTTP client for a running platform (a person's browser without the browser): a cookie jar, CSRF on
posts, sign-in through the login form, no redirect followed unless asked; and the links of an HTML page as a
browser would request them (``a[href]``, ``form`` GET submissions with their default values, ``iframe``,
``img``, ``link`` and ``script`` sources)."""

import http.client
import json as jsonlib
from dataclasses import dataclass, field
from http.cookies import SimpleCookie
from urllib.parse import urlencode, urljoin, urlsplit

import lxml.html

BROWSER_ACCEPT = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"  # what Chromium sends


@dataclass
class Response:
    method: str
    url: str  # path and query, as requested
    status: int
    headers: dict
    body: bytes

    @property
    def content_type(self) -> str:
        return self.headers.get("content-type", "")

    @property
    def location(self) -> str:
        return self.headers.get("location", "")

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", errors="replace")

    def json(self):
        return jsonlib.loads(self.body)


@dataclass
class Client:
    """One person's HTTP session with the server at ``base`` (``http://host:port``); ``token``: the API's
    ``Authorization: Token``, sent instead of the session cookie to ``/api/`` when set and ``api=True``."""

    base: str
    name: str = "anonymous"
    token: str | None = None
    cookies: dict = field(default_factory=dict)
    timeout: float = 60

    def request(self, method, url, body: bytes | None = None, headers=None, api=False) -> Response:
        parts = urlsplit(urljoin(self.base + "/", url))
        path = parts.path + (f"?{parts.query}" if parts.query else "")
        sent = {"Host": parts.netloc, **({} if api else {"Accept": BROWSER_ACCEPT}), **(headers or {})}
        if api and self.token:
            sent["Authorization"] = f"Token {self.token}"
        elif self.cookies:
            sent["Cookie"] = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=self.timeout)
        try:
            connection.request(method, path, body=body, headers=sent)
            answer = connection.getresponse()
            data = answer.read()
            headers = {k.lower(): v for k, v in answer.getheaders() if k.lower() != "set-cookie"}
            for raw in answer.headers.get_all("Set-Cookie") or []:
                self.keep_cookie(raw)
        finally:
            connection.close()
        return Response(method, path, answer.status, headers, data)

    def keep_cookie(self, raw: str) -> None:
        for name, morsel in SimpleCookie(raw).items():
            if morsel["max-age"] == "0" or morsel.value == "":
                self.cookies.pop(name, None)
            else:
                self.cookies[name] = morsel.value

    def get(self, url, api=False, headers=None) -> Response:
        return self.request("GET", url, headers=headers, api=api)

    def csrf_token(self) -> str:
        if "csrftoken" not in self.cookies:
            self.get("/accounts/login/")
        return self.cookies["csrftoken"]

    def post(self, url, data: dict | list | None = None, api=False) -> Response:
        """A form post (``application/x-www-form-urlencoded``) with the CSRF token, as a page's form sends it."""
        fields = list(data.items()) if isinstance(data, dict) else list(data or [])
        headers = {"Content-Type": "application/x-www-form-urlencoded"}
        if not api:
            token = self.csrf_token()
            fields.append(("csrfmiddlewaretoken", token))
            headers["X-CSRFToken"] = token
        return self.request("POST", url, urlencode(fields, doseq=True).encode(), headers, api=api)

    def post_json(self, url, body, method="POST", api=True) -> Response:
        """A JSON request: with the token under ``/api/`` (``api=True``), else with the session and CSRF header
        (the review page's own calls)."""
        headers = {"Content-Type": "application/json"}
        if not api:
            headers["X-CSRFToken"] = self.csrf_token()
        return self.request(method, url, jsonlib.dumps(body).encode(), headers, api=api)

    def sign_in(self, username: str, password: str) -> Response:
        """The login form, as a person fills it: 302 to the home page when the password is right."""
        self.get("/accounts/login/")
        return self.post("/accounts/login/", {"username": username, "password": password, "next": "/"})

    def follow(self, response: Response, limit=5) -> Response:
        """Follow the redirects of ``response`` (GET, same server)."""
        while response.status in (301, 302, 303, 307, 308) and limit:
            response, limit = self.get(response.location), limit - 1
        return response


def form_submission(form, page_url: str) -> str | None:
    """The URL a browser requests when a GET form is submitted as the page shows it (its fields' default values);
    None for a POST form, or one the browser would not submit as it is (a ``required`` field left empty)."""
    if (form.get("method") or "get").lower() != "get":
        return None
    if unfilled_required(form):
        return None
    fields = []
    for element in form.iter("input", "select", "textarea"):
        name = element.get("name")
        if not name or element.get("disabled") is not None:
            continue
        if element.tag == "select":
            options = list(element.iter("option"))
            chosen = [o for o in options if o.get("selected") is not None] or options[:1]
            fields += [(name, option_value(o)) for o in chosen]
        elif element.tag == "textarea":
            fields.append((name, element.text or ""))
        elif element.get("type", "text").lower() in ("checkbox", "radio"):
            if element.get("checked") is not None:
                fields.append((name, element.get("value", "on")))
        elif element.get("type", "text").lower() not in ("submit", "button", "image", "reset", "file"):
            fields.append((name, element.get("value", "")))
    action = urljoin(page_url, form.get("action") or page_url).split("#")[0].split("?")[0]
    return f"{action}?{urlencode(fields)}" if fields else action


def unfilled_required(form) -> bool:
    """A ``required`` field without a value: the browser refuses to submit (a radio group needs one checked)."""
    for element in form.iter("input", "select", "textarea"):
        if element.get("required") is None or element.get("disabled") is not None:
            continue
        kind = (element.get("type") or "text").lower()
        if kind in ("radio", "checkbox"):
            group = [e for e in form.iter("input") if e.get("name") == element.get("name")]
            if not any(e.get("checked") is not None for e in group):
                return True
        elif element.tag == "select":
            if not any(option_value(option) for option in element.iter("option")):
                return True
        elif not (element.get("value") if element.tag == "input" else element.text):
            return True
    return False


def option_value(option) -> str:
    return option.get("value") if option.get("value") is not None else option.text_content()


def hidden(element) -> bool:
    """The element or one around it has the ``hidden`` attribute: not shown (until a script reveals it)."""
    return any(e.get("hidden") is not None for e in element.iterancestors()) or element.get("hidden") is not None


LINKS = (("a", "href"), ("iframe", "src"), ("img", "src"), ("link", "href"), ("script", "src"))


def page_links(html: bytes, page_url: str) -> list[tuple[str, str]]:
    """``[(kind, absolute URL without fragment)]`` of what a browser would request or follow from the page; the
    kind of a link in a hidden element starts with ``hidden``."""
    try:
        root = lxml.html.document_fromstring(html)
    except Exception:  # an empty or non-HTML body: nothing to follow
        return []
    found = []
    for tag, attribute in LINKS:
        for element in root.iter(tag):
            value = (element.get(attribute) or "").strip()
            if value and not value.startswith(("javascript:", "mailto:", "data:", "#")):
                kind = f"{'hidden ' if hidden(element) else ''}{tag}[{attribute}]"
                found.append((kind, urljoin(page_url, value).split("#")[0]))
    for form in root.iter("form"):
        submitted = form_submission(form, page_url)
        if submitted is not None:
            found.append((f"{'hidden ' if hidden(form) else ''}form GET", submitted))
    return found
