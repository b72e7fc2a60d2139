"""Mind2Web pages in a real headless Chromium against a live server: a reviewer works the proposal queue with the
keyboard only (move, edit, accept as edited, reject), and verifies a demonstration on the review page (refines
its description and discards it)."""

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import WebDriverWait

from annotation.actions import mind2web
from annotation.models import Demonstration, ProposalStatus, ProposedTask
from tests.support.browser import use_session
from tests.support.mind2web_data import SEEDS, website
from tests.support.review_data import recorded_demo
from tests.support.review_ui import open_page, wait_revision

pytestmark = pytest.mark.browser


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
    browser.get(f"{live_server.url}/mind2web/projects/alpha/screening/")
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


def test_question_mark_lists_the_proposal_queues_keys(browser, live_server, alpha, owner, reviewer):
    site = website(alpha)
    mind2web.do_submit_round(owner, mind2web.do_start_round(owner, site).pk, ["Track my order"])
    use_session(browser, live_server.url, reviewer)
    browser.get(f"{live_server.url}/mind2web/projects/alpha/screening/")
    dialog = WebDriverWait(browser, 20).until(lambda d: d.find_element(By.ID, "shortcuts-dialog"))
    WebDriverWait(browser, 20).until(lambda d: dialog.get_attribute("data-ready") == "true")
    browser.find_element(By.TAG_NAME, "body").send_keys("?")
    WebDriverWait(browser, 10).until(lambda d: dialog.is_displayed())
    assert "accept the proposal" in dialog.text
    dialog.send_keys("a")  # held back while the list is open: nothing is accepted
    dialog.send_keys(Keys.ESCAPE)
    WebDriverWait(browser, 10).until(lambda d: not dialog.is_displayed())
    assert ProposedTask.objects.get().status == ProposalStatus.PENDING


def test_a_refused_website_keeps_what_was_typed(browser, live_server, alpha, researcher):
    use_session(browser, live_server.url, researcher)
    browser.get(f"{live_server.url}/mind2web/projects/alpha/")
    form = WebDriverWait(browser, 20).until(lambda d: d.find_element(By.ID, "website-form"))
    typed = {
        "name": "carmax",
        "url": "ftp://www.carmax.com/",  # a URL to the browser, not an http(s) one to the platform
        "domain": "Shopping",
        "subdomain": "Cars",
        "description": "Used cars",
    }
    for name, value in typed.items():
        form.find_element(By.NAME, name).send_keys(value)
    target = form.find_element(By.NAME, "target_tasks")
    target.clear()
    target.send_keys("7")
    form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    WebDriverWait(browser, 20).until(lambda d: d.find_elements(By.ID, "website-error"))
    form = browser.find_element(By.ID, "website-form")
    assert "not an http(s) URL" in form.find_element(By.CSS_SELECTOR, '[data-field="url"]').text
    for name, value in {**typed, "target_tasks": "7"}.items():
        assert form.find_element(By.NAME, name).get_attribute("value") == value
