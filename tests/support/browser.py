"""A real headless Chromium driven by Selenium, started with the flags this machine needs (``agents.browser``).

Uses the distribution's Chromium and ChromeDriver (never downloads one); ``CHROME_BINARY`` and
``CHROMEDRIVER`` override their paths.
"""

import tempfile

from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException, WebDriverException
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import WebDriverWait

from agents.browser import chrome_options, start_chrome


def make_driver(
    extension_dir: str | None = None,
    width=1280,
    height=943,
    extra_args: tuple[str, ...] = (),
    profile: str | None = None,
) -> webdriver.Chrome:
    """Headless Chromium as the agents start it (``agents.browser``); ``--window-size=1280,943`` gives a 1280×800
    viewport.

    ``extra_args``: more command-line flags (e.g. ``--allowlisted-extension-id=<id>`` for tab video).
    ``profile``: a ``--user-data-dir`` that outlives the browser (the caller deletes it), so another Chromium can
    start on it; by default a fresh profile, deleted on ``quit()``."""
    keep_profile = profile is not None
    profile = profile or tempfile.mkdtemp(prefix="chromium-profile-")
    options = chrome_options(profile, width, height)
    if extension_dir:
        options.add_argument(f"--load-extension={extension_dir}")
        options.add_argument(f"--disable-extensions-except={extension_dir}")
    for flag in extra_args:
        options.add_argument(flag)
    return start_chrome(options, delete_profile=None if keep_profile else profile)


def wait_for(driver, condition, timeout=20):
    """Wait until ``condition(driver)`` is truthy; returns its value.

    A condition finds its elements afresh on every poll, so an element that goes stale between the find and the read
    (the page was replaced under it, e.g. by a form submission) means "not yet", not a failure. ChromeDriver reports
    that race either as a stale element or, when the read reaches the inspector first, as an "unknown error" that
    the node "does not belong to the document": both are the same race.
    """

    def poll(d):
        try:
            return condition(d)
        except WebDriverException as error:
            if DETACHED_NODE in (error.msg or ""):
                return False
            raise

    return WebDriverWait(driver, timeout, ignored_exceptions=(StaleElementReferenceException,)).until(poll)


def text_of(browser, element_id):
    """The element's text; None while it is missing or the page is being replaced (a write reloads the page, and
    an element found on the old document can be gone before its text is read)."""
    try:
        return browser.find_element(By.ID, element_id).text
    except WebDriverException:
        return None


# What ChromeDriver says when an element found in one document is read after the page replaced that document.
DETACHED_NODE = "does not belong to the document"


def sign_in_form(driver, base_url: str, username: str, password: str) -> None:
    """Sign in through the login page as a person does; returns once the header names the user."""
    driver.get(base_url + "/accounts/login/")
    driver.find_element(By.NAME, "username").send_keys(username)
    driver.find_element(By.NAME, "password").send_keys(password)
    driver.find_element(By.CSS_SELECTOR, "form button[type=submit]").click()
    # Left the login page: the sign-in answered and its new session cookie is set. (A browser already signed in
    # shows the header on the login page too; leaving before the answer would keep a session the sign-in ended.)
    WebDriverWait(driver, 20).until(lambda d: "/accounts/login/" not in d.current_url)
    WebDriverWait(driver, 20).until(EC.presence_of_element_located((By.CSS_SELECTOR, ".who")))


def use_session(driver, base_url: str, user) -> None:
    """Give the browser ``user``'s session, logged in through Django's test client (no form)."""
    from django.test import Client  # needs Django set up: only the tests against pytest-django's live server use it

    client = Client()
    client.force_login(user)
    driver.get(base_url + "/healthz")
    driver.delete_all_cookies()
    driver.add_cookie({"name": "sessionid", "value": client.cookies["sessionid"].value, "path": "/"})


def click_and_confirm(driver, element, timeout=20) -> str:
    """Click a control that asks ``window.confirm`` first (destructive actions) and accept; returns the question."""
    element.click()
    alert = WebDriverWait(driver, timeout).until(EC.alert_is_present())
    question = alert.text
    alert.accept()
    return question


RECORD_CSP_VIOLATIONS = """
window.__cspViolations = [];
document.addEventListener("securitypolicyviolation", (event) => {
  window.__cspViolations.push(`${event.violatedDirective} ${event.blockedURI} ${event.sourceFile}:${event.lineNumber}`);
});
"""
