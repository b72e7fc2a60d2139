"""Mind2Web pages in a real headless Chromium against a live server: a reviewer works the proposal queue with the
keyboard only (move, edit, accept as edited, reject), and verifies a demonstration on the review page (refines
its description and discards it)."""

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import WebDriverWait

from annotation.actions import mind2web
from annotation.models import Demonstration, ProposalStatus, ProposedTask
from tests.e2e.browser import use_session
from tests.e2e.test_review_ui import open_page, wait_revision
from tests.mind2web_data import SEEDS, website
from tests.review_data import recorded_demo

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def selected_id(browser):
    found = browser.find_elements(By.CSS_SELECTOR, "#proposal-queue li.selected")
    return int(found[0].get_attribute("data-proposal")) if found else None


def status_of(proposal) -> str:
    return ProposedTask.objects.get(pk=proposal.pk).status


def test_a_reviewer_works_the_proposal_queue_with_the_keyboard(browser, live_server, alpha, owner, reviewer):
    site = website(alpha)
    proposal_round = mind2web.do_start_round(owner, site)
    near, fresh = mind2web.do_submit_round(owner, proposal_round.pk, [SEEDS[0] + " please", "Track my order"])
    use_session(browser, live_server.url, reviewer)
    browser.get(f"{live_server.url}/mind2web/projects/alpha/review/")
    WebDriverWait(browser, 20).until(lambda d: selected_id(d) == near.pk)
    assert "too similar to" in browser.find_element(By.CSS_SELECTOR, f'li[data-proposal="{near.pk}"]').text

    body = browser.find_element(By.TAG_NAME, "body")
    body.send_keys("j")
    WebDriverWait(browser, 10).until(lambda d: selected_id(d) == fresh.pk)
    browser.switch_to.active_element.send_keys("e")
    text = browser.switch_to.active_element
    assert text.tag_name == "textarea"
    text.send_keys(Keys.CONTROL, "a")
    text.send_keys("Track the order I placed yesterday")
    text.send_keys(Keys.CONTROL, Keys.ENTER)
    WebDriverWait(browser, 20).until(lambda d: status_of(fresh) == ProposalStatus.ACCEPTED)
    assert ProposedTask.objects.get(pk=fresh.pk).final_text == "Track the order I placed yesterday"

    WebDriverWait(browser, 20).until(
        lambda d: selected_id(d) == near.pk and len(d.find_elements(By.CSS_SELECTOR, "li.proposal")) == 1
    )
    browser.switch_to.active_element.send_keys("r")
    WebDriverWait(browser, 20).until(lambda d: status_of(near) == ProposalStatus.REJECTED)
    WebDriverWait(browser, 20).until(lambda d: d.find_elements(By.ID, "queue-empty"))


def test_a_reviewer_refines_and_discards_a_task_on_the_review_page(browser, live_server, alpha, reviewer):
    demo = recorded_demo()
    use_session(browser, live_server.url, reviewer)
    open_page(browser, live_server, demo)
    form = browser.find_element(By.ID, "verification-form")
    form.find_element(By.NAME, "refined_task").send_keys("Find the weather in Montreal for tomorrow")
    form.find_element(By.NAME, "discarded").click()
    browser.find_element(By.ID, "btn-save-verification").click()
    wait_revision(browser, 1)
    demo = Demonstration.objects.get(pk=demo.pk)
    assert demo.discarded
    assert demo.refined_task == "Find the weather in Montreal for tomorrow"
    assert browser.find_element(By.NAME, "discarded").is_selected()
