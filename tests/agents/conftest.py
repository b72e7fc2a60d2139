"""Fixtures the agent tests share."""

import pytest

from agents.browser import make_driver
from tests.support.markers import needs


@pytest.fixture(scope="module")
@needs("browser")
def driver():
    """One headless Chromium (the agents' own driver) for a module's tests."""
    browser = make_driver()
    yield browser
    browser.quit()
