"""People in the app, in a real headless Chromium: a project admin makes three invitation links on the members page
and three people join with them (two with new accounts, one signed in with an existing one); a used link is
refused; a person changes their password on their account page; a site admin creates an account and deactivates
one on the People page, and the deactivated person can no longer sign in."""

import pytest
from django.contrib.auth import get_user_model
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select

from tests.support.browser import click_and_confirm, sign_in_form, wait_for

pytestmark = pytest.mark.browser
NEW_PASSWORD = "Joined-Passw0rd-77"


def sign_out(browser):
    browser.find_element(By.CSS_SELECTOR, "header form button").click()
    wait_for(browser, lambda d: d.find_elements(By.LINK_TEXT, "Sign in"))


def make_link(browser, url, role) -> str:
    browser.get(url + "/projects/alpha/members/")
    Select(browser.find_element(By.CSS_SELECTOR, "#invitation-create select[name=role]")).select_by_value(role)
    browser.find_element(By.CSS_SELECTOR, "#invitation-create button").click()
    field = wait_for(browser, lambda d: d.find_elements(By.ID, "invitation-link"))[0]
    return field.get_attribute("value")


def join_with_new_account(browser, link, username, password=NEW_PASSWORD):
    browser.get(link)
    browser.find_element(By.CSS_SELECTOR, "#join-new input[name=username]").send_keys(username)
    browser.find_element(By.CSS_SELECTOR, "#join-new input[name=password1]").send_keys(password)
    browser.find_element(By.CSS_SELECTOR, "#join-new input[name=password2]").send_keys(password)
    browser.find_element(By.ID, "join-create").click()
    return wait_for(browser, lambda d: d.find_elements(By.ID, "messages"))[0].text


def sign_in_fails(browser, url, username, password) -> bool:
    browser.get(url + "/accounts/login/")
    browser.find_element(By.NAME, "username").send_keys(username)
    browser.find_element(By.NAME, "password").send_keys(password)
    browser.find_element(By.CSS_SELECTOR, "form button[type=submit]").click()
    wait_for(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "p.error") or d.find_elements(By.CSS_SELECTOR, ".who"))
    return bool(browser.find_elements(By.CSS_SELECTOR, "p.error"))


def test_three_people_join_by_link_and_a_used_link_is_refused(browser, live_server, boss, alpha, outsider):
    url = live_server.url
    browser.delete_all_cookies()
    sign_in_form(browser, url, "boss", "boss-Passw0rd!")
    links = [make_link(browser, url, role) for role in ("reviewer", "annotator", "researcher")]
    assert len(set(links)) == 3
    assert len(browser.find_elements(By.CSS_SELECTOR, "#invitations tr[data-invitation]")) == 3
    sign_out(browser)

    assert "You joined alpha as Reviewer." in join_with_new_account(browser, links[0], "rita")
    assert browser.find_element(By.CSS_SELECTOR, ".who").text == "rita"
    sign_out(browser)
    assert "You joined alpha as Annotator." in join_with_new_account(browser, links[1], "anna")
    sign_out(browser)

    # An existing account: sign in from the invitation page, come back to it, join with one click.
    browser.get(links[2])
    browser.find_element(By.ID, "join-sign-in").click()
    browser.find_element(By.NAME, "username").send_keys("outsider")
    browser.find_element(By.NAME, "password").send_keys("outsider-Passw0rd!")
    browser.find_element(By.CSS_SELECTOR, "form button[type=submit]").click()
    wait_for(browser, lambda d: d.find_elements(By.ID, "join")).pop().click()
    assert "You joined alpha as Researcher." in wait_for(browser, lambda d: d.find_elements(By.ID, "messages"))[0].text
    sign_out(browser)

    # The first link again, second use: refused, and nothing is made.
    browser.get(links[0])
    page = wait_for(browser, lambda d: d.find_elements(By.ID, "error-page"))[0]
    assert page.get_attribute("data-status") == "410"
    assert "used already" in page.text
    assert not browser.find_elements(By.ID, "join-new")

    sign_in_form(browser, url, "boss", "boss-Passw0rd!")
    browser.get(url + "/projects/alpha/members/")
    members = {
        row.get_attribute("data-username"): Select(row.find_element(By.NAME, "role")).first_selected_option.text
        for row in browser.find_elements(By.CSS_SELECTOR, "#members tr[data-username]")
    }
    assert members == {"boss": "Admin", "rita": "Reviewer", "anna": "Annotator", "outsider": "Researcher"}
    assert browser.find_element(By.CSS_SELECTOR, "#invitations td.empty").text.startswith(
        "No open invitation links: make one above"
    )
    sign_out(browser)


def test_a_person_changes_their_password_on_their_account_page(browser, live_server, owner):
    url = live_server.url
    browser.delete_all_cookies()
    sign_in_form(browser, url, "owner", "owner-Passw0rd!")
    browser.find_element(By.CSS_SELECTOR, "a.who").click()
    wait_for(browser, lambda d: d.find_elements(By.ID, "password-change"))
    assert "alpha: Annotator" in browser.find_element(By.ID, "account-projects").text
    form = browser.find_element(By.ID, "password-change")
    form.find_element(By.NAME, "old_password").send_keys("wrong-one")
    form.find_element(By.NAME, "new_password1").send_keys(NEW_PASSWORD)
    form.find_element(By.NAME, "new_password2").send_keys(NEW_PASSWORD)
    browser.find_element(By.ID, "change-password").click()
    form = wait_for(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#password-change .errorlist"))
    assert "incorrect" in form[0].text
    form = browser.find_element(By.ID, "password-change")
    form.find_element(By.NAME, "old_password").send_keys("owner-Passw0rd!")
    form.find_element(By.NAME, "new_password1").send_keys(NEW_PASSWORD)
    form.find_element(By.NAME, "new_password2").send_keys(NEW_PASSWORD)
    browser.find_element(By.ID, "change-password").click()
    assert "Password changed." in wait_for(browser, lambda d: d.find_elements(By.ID, "messages"))[0].text
    sign_out(browser)
    assert sign_in_fails(browser, url, "owner", "owner-Passw0rd!")
    assert not sign_in_fails(browser, url, "owner", NEW_PASSWORD)
    sign_out(browser)


def test_a_site_admin_creates_and_deactivates_accounts(browser, live_server, owner, teammate):
    url = live_server.url
    get_user_model().objects.create_superuser("root", password="Root-Passw0rd!")
    browser.delete_all_cookies()
    sign_in_form(browser, url, "root", "Root-Passw0rd!")
    browser.find_element(By.LINK_TEXT, "People").click()
    form = wait_for(browser, lambda d: d.find_elements(By.ID, "account-create"))[0]
    form.find_element(By.NAME, "username").send_keys("carol")
    form.find_element(By.NAME, "password1").send_keys(NEW_PASSWORD)
    form.find_element(By.NAME, "password2").send_keys(NEW_PASSWORD)
    form.find_element(By.CSS_SELECTOR, "button").click()
    assert "Account carol created" in wait_for(browser, lambda d: d.find_elements(By.ID, "messages"))[0].text
    for username in ("owner", "teammate"):
        row = browser.find_element(By.CSS_SELECTOR, f'#people tr[data-username="{username}"]')
        assert "Deactivate owner?" in click_and_confirm(browser, row.find_element(By.CSS_SELECTOR, "button")) or (
            username == "teammate"
        )
        wait_for(
            browser,
            lambda d, name=username: (
                "deactivated" in d.find_element(By.CSS_SELECTOR, f'#people tr[data-username="{name}"] td.state').text
            ),
        )
    sign_out(browser)
    assert sign_in_fails(browser, url, "owner", "owner-Passw0rd!")
    assert sign_in_fails(browser, url, "teammate", "teammate-Passw0rd!")
    assert not sign_in_fails(browser, url, "carol", NEW_PASSWORD)
    sign_out(browser)
