"""Waiting on a background job through its API (polling a condition, never a fixed wait)."""

import time


def job_ended(body) -> bool:
    return body["status"] in ("done", "failed", "cancelled")


def poll_job(client, url, until=job_ended, timeout=180) -> list:
    """GET a background job's ``url`` until ``until(body)`` (a condition, never a fixed wait); every body seen."""
    seen, deadline = [], time.monotonic() + timeout
    while time.monotonic() < deadline:
        seen.append(client.get(url).json())
        if until(seen[-1]):
            return seen
        time.sleep(0.05)
    raise AssertionError(f"{url} never reached the expected state: {seen[-1]}")
