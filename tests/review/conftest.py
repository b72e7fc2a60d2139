"""Fixtures the review tests share."""

import pytest

from tests.support.review_data import recorded_demo


@pytest.fixture
def demo(alpha):
    return recorded_demo()
