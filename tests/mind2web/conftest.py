"""Fixtures the Mind2Web tests share."""

import pytest

from tests.support.mind2web_data import website


@pytest.fixture
def site(alpha):
    return website(alpha)
