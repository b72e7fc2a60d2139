"""Pages fit the role: the review list offers assign and return only to reviewers and admins, "Export selection"
only to researchers and admins, and an annotator no bulk action (nor selection boxes); the header links to agent
runs only for researchers and admins, to People only for site admins; an empty review list says what comes first."""

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from annotation.models import Membership, Role
from tests.conftest import make_user, start_demo

pytestmark = pytest.mark.django_db


def page(user, url) -> str:
    client = Client()
    client.force_login(user)
    response = client.get(url)
    assert response.status_code == 200
    return response.content.decode()


@pytest.fixture
def boss(alpha):
    return make_user("boss", alpha, Role.ADMIN)


def test_the_review_lists_bulk_actions_fit_each_role(alpha, owner, teammate, reviewer, researcher, boss):
    start_demo(owner, alpha, instructor=teammate, status="recorded")
    seen = {
        user.username: {
            control
            for control in ("btn-bulk-assign", "btn-bulk-return", "btn-bulk-export", "select-all", 'class="pick"')
            if control in page(user, "/review/")
        }
        for user in (owner, reviewer, researcher, boss)
    }
    assert seen["owner"] == set()
    assert seen["reviewer"] == {"btn-bulk-assign", "btn-bulk-return", "select-all", 'class="pick"'}
    assert seen["researcher"] == {"btn-bulk-export", "select-all", 'class="pick"'}
    assert seen["boss"] == {"btn-bulk-assign", "btn-bulk-return", "btn-bulk-export", "select-all", 'class="pick"'}


def test_a_reviewer_who_researches_elsewhere_gets_export_there(alpha, beta, reviewer):
    Membership.objects.create(project=beta, user=reviewer, role=Role.RESEARCHER)
    assert "btn-bulk-export" in page(reviewer, "/review/")


def test_the_header_links_fit_the_role(owner, reviewer, researcher, boss):
    root = get_user_model().objects.create_superuser("root", password="Root-Passw0rd!")
    agents = {
        user.username: 'href="/agents/runs/"' in page(user, "/") for user in (owner, reviewer, researcher, boss, root)
    }
    assert agents == {"owner": False, "reviewer": False, "researcher": True, "boss": True, "root": True}
    people = {user.username: 'href="/people/"' in page(user, "/") for user in (owner, boss, root)}
    assert people == {"owner": False, "boss": False, "root": True}
    assert 'href="/account/"' in page(owner, "/")


def test_an_empty_review_list_says_what_comes_first(owner):
    assert "Annotators record them with the recorder extension" in page(owner, "/review/")


def test_the_home_page_without_a_project_says_what_to_do_first(db):
    newcomer = make_user("newcomer")
    assert "Ask a project admin for an invitation link" in page(newcomer, "/")
    root = get_user_model().objects.create_superuser("root", password="Root-Passw0rd!")
    home = page(root, "/")
    assert "Start with a" in home
    assert 'href="/projects/"' in home
