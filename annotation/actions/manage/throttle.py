"""Failures counted in the cache (Redis when ``REDIS_URL`` is set, so every server process shares the count): after
``LOGIN_FAILURE_LIMIT`` failures under one key within ``LOGIN_FAILURE_WINDOW_SECONDS`` (the window starts with the
first failure), every attempt under that key is refused (429 with ``Retry-After``) until the window ends. Used by
sign-in (``signin``: per name and address) and by joining with an invitation link (``invitations``: per address and
per link). Keys are hashed by the callers, so no name or address sits in the cache in clear."""

import time

from django.conf import settings
from django.core.cache import cache

from ..errors import TooManyRequests


def check_failures(keys: list[str], refused: str) -> None:
    """Refuse (429, ``refused`` then when to try again) when any of ``keys`` has reached the limit."""
    counted = cache.get_many([name for key in keys for name in (key, f"{key}:since")])
    over = [key for key in keys if counted.get(key, 0) >= settings.LOGIN_FAILURE_LIMIT]
    if not over:
        return
    ends = max(counted.get(f"{key}:since", time.time()) + settings.LOGIN_FAILURE_WINDOW_SECONDS for key in over)
    retry_after = max(1, round(ends - time.time()))
    raise TooManyRequests(f"{refused}; try again in {retry_after} seconds", retry_after=retry_after)


def do_note_failure(key: str) -> int:
    """Count one failure under ``key`` in the current window (started by the first failure); returns the count."""
    window = settings.LOGIN_FAILURE_WINDOW_SECONDS
    cache.add(f"{key}:since", time.time(), window)
    cache.add(key, 0, window)  # both expire when the window ends
    try:
        return cache.incr(key)
    except ValueError:  # expired between add and incr: this failure starts a new window
        cache.set(key, 1, window)
        return 1


def do_forget_failures(key: str) -> None:
    cache.delete_many([key, f"{key}:since"])
