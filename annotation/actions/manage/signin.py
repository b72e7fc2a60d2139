"""Sign-in throttling: at most ``LOGIN_FAILURE_LIMIT`` failed sign-ins per username and address in
``LOGIN_FAILURE_WINDOW_SECONDS``; then every attempt of that pair is refused (429 with ``Retry-After``) until the
window ends. Counted in the cache (``throttle``: Redis when ``REDIS_URL`` is set, so every server process shares the
count).

The ways to guess a password (``/accounts/login/``, ``/admin/login/``, ``POST /api/auth/token/``) check
``check_sign_in_allowed`` before authenticating; every failed ``authenticate()`` is counted through Django's
``user_login_failed`` signal (``annotation/apps.py``). The check sees the name as typed, the count the name the
sign-in looked the account up by (the sign-in form's NFKC form): both are keyed by ``sign_in_name``, so every
spelling that reaches one account (fullwidth ``ｏｗｎｅｒ``, mathematical ``𝐨𝐰𝐧𝐞𝐫``, ``OWNER``) shares one count.
"""

import hashlib
import unicodedata

from .throttle import check_failures, do_forget_failures, do_note_failure

# Names longer than any account's (150) are cut before normalising: NFKC of a huge body is slow, and such names
# sharing a count only throttles junk together.
NAME_CHARS = 1024


def sign_in_name(username: str) -> str:
    """The account a typed name can reach, as one string: stripped, NFKC (what Django's sign-in forms do before
    the account is looked up), case-folded (accounts differ by more than case: sign-up refuses ``Owner`` beside
    ``owner``), and NFKC again (case folding can leave a string that NFKC changes)."""
    name = str(username or "").strip()[:NAME_CHARS]
    return unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", name).casefold())


def failure_key(username: str, address: str) -> str:
    """One cache key per (account name, address) (``sign_in_name``); hashed, so no username or address sits in the
    cache in clear."""
    digest = hashlib.sha256(f"{sign_in_name(username)}\n{address or ''}".encode()).hexdigest()
    return f"sign-in-failures:{digest}"


def check_sign_in_allowed(username: str, address: str) -> None:
    """Refuse (429) a sign-in of ``username`` from ``address`` after too many recent failures."""
    check_failures([failure_key(username, address)], "too many failed sign-ins for this username from your address")


def do_note_sign_in_failure(username: str, address: str) -> int:
    """Count one failed sign-in in the current window (started by the first failure); returns the count."""
    return do_note_failure(failure_key(username, address))


def do_forget_sign_in_failures(username: str, address: str) -> None:
    """A successful sign-in clears the pair's count."""
    do_forget_failures(failure_key(username, address))


def client_address(request) -> str:
    """The address the request came from: ``REMOTE_ADDR``, the connection's peer, or behind a proxy named in
    ``TRUSTED_PROXIES`` the client address it forwarded (``config.asgi.behind_proxies``); a client's own
    ``X-Forwarded-For`` is never believed."""
    return request.META.get("REMOTE_ADDR", "")
