"""Fixtures shared by the browser tests."""

import pytest

from tests.e2e.browser import make_driver
from tests.e2e.recorder_harness import fixture_servers


@pytest.fixture(scope="module")
def servers():
    """The local fixture pages: ``(base URL, cross-origin base URL)``."""
    with fixture_servers() as urls:
        yield urls


@pytest.fixture(scope="module")
def browser():
    """One headless Chromium for a module's tests (modules that need the extension define their own)."""
    driver = make_driver()
    yield driver
    driver.quit()
