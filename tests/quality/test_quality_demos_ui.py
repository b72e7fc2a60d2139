"""A second review in a real headless Chromium against a live server: the project sends every decided demo to a
second reviewer; that reviewer's review list says so, "Review next" opens the second review page, they mark a turn
invalid and return it; the first decision stands, and the admin's agreement page counts it (docs/quality.md)."""

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import WebDriverWait

from annotation.actions import review
from annotation.models import DemoStatus, Role, Turn, TurnType
from tests.support.actors import make_user
from tests.support.browser import use_session
from tests.support.review_data import recorded_demo

pytestmark = pytest.mark.browser


def test_a_second_reviewer_finds_decides_and_the_admin_sees_it(browser, live_server, alpha):
    alpha.second_review_percent = 100
    alpha.save()
    first, second = make_user("rae", alpha, Role.REVIEWER), make_user("rob", alpha, Role.REVIEWER)
    admin = make_user("ada", alpha, Role.ADMIN)
    demo = recorded_demo()
    review.do_transition(first, demo, 0, "validate")  # rae's decision, as the review page makes it

    use_session(browser, live_server.url, second)
    browser.get(f"{live_server.url}/review/")
    link = browser.find_element(By.ID, "second-reviews-link")
    assert link.text == "1 second review for you"
    browser.find_element(By.ID, "btn-review-next").click()
    WebDriverWait(browser, 20).until(EC.url_to_be(f"{live_server.url}/quality/second-reviews/{demo.name}/"))
    turn = Turn.objects.filter(demonstration=demo, type=TurnType.BROWSER).order_by("seq").first()
    browser.find_element(By.CSS_SELECTOR, f'tr[data-turn="{turn.pk}"] input[name="invalid_turns"]').click()
    browser.find_element(By.CSS_SELECTOR, 'input[name="decision"][value="return"]').click()
    browser.find_element(By.ID, "btn-second-decide").click()
    WebDriverWait(browser, 20).until(EC.url_to_be(f"{live_server.url}/quality/second-reviews/"))
    assert f"second review of {demo.name} is recorded" in browser.find_element(By.TAG_NAME, "body").text
    assert "No second review waiting for you" in browser.find_element(By.ID, "second-reviews").text

    browser.get(f"{live_server.url}/quality/second-reviews/{demo.name}/")
    state = browser.find_element(By.ID, "second-review-state").text
    assert "Return" in state
    assert "rae: Accept" in state  # the first decision is shown once the second is made
    browser.get(f"{live_server.url}/review/{demo.name}/revision")
    assert f'"status": "{DemoStatus.VALIDATED}"' in browser.find_element(By.TAG_NAME, "body").text  # unchanged

    use_session(browser, live_server.url, admin)
    browser.get(f"{live_server.url}/projects/alpha/quality/reviewers/")
    assert browser.find_element(By.CSS_SELECTOR, '[data-count="decided"]').text == "1"
    assert browser.find_element(By.CSS_SELECTOR, '[data-count="agreeing"]').text == "0"
    row = browser.find_element(By.CSS_SELECTOR, 'tr[data-pair="rae|rob"]')
    assert "undefined" in row.find_element(By.CSS_SELECTOR, '[data-kappa="decisions"]').text  # one demo
