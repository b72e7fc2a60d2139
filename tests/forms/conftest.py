"""Fixtures the form-task tests share."""

import pytest

from annotation.models import Role
from tests.support.actors import make_user


@pytest.fixture
def manager(alpha):
    return make_user("manager", alpha, Role.RESEARCHER)
