"""The one way tests wait for something outside the test process (a worker, a server, a browser's recorder): poll
the condition the test needs, never a fixed pause. (A page in Selenium: ``tests.support.browser.wait_for``.)"""

import time


def wait_until(predicate, timeout: float, interval: float = 0.25, message: str = "condition"):
    """Poll ``predicate`` until it returns a truthy value (returned) or ``timeout`` passes (TimeoutError)."""
    deadline, last = time.monotonic() + timeout, None
    while True:
        last = predicate()
        if last:
            return last
        if time.monotonic() > deadline:
            raise TimeoutError(f"{message} not met after {timeout}s (last: {last!r})")
        time.sleep(interval)
