"""A person signs in to the running platform in a real browser and finds the sample data and the API docs."""

import uuid

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import WebDriverWait

from tests.support.browser import RECORD_CSP_VIOLATIONS, make_driver, sign_in_form

pytestmark = [pytest.mark.browser, pytest.mark.processes]


def sign_in(browser, platform):
    credentials = platform.credentials()
    sign_in_form(browser, platform.url, credentials["username"], credentials["password"])


def test_admin_signs_in_and_sees_the_sample_project(browser, platform):
    sign_in(browser, platform)
    rows = browser.find_elements(By.CSS_SELECTOR, "#projects tbody tr")
    assert any("sample" in row.text and row.text.strip().endswith("2") for row in rows)
    # the sample's two synthetic demos (`--sample-demos 2`) and the sample-mind2web project's recorded task
    assert len(browser.find_elements(By.CSS_SELECTOR, "#recent tbody tr")) == 3


def test_wrong_password_is_refused_with_a_message(platform):
    driver = make_driver()
    try:
        driver.get(platform.url + "/accounts/login/")
        driver.find_element(By.NAME, "username").send_keys("admin")
        driver.find_element(By.NAME, "password").send_keys("not-the-password")
        driver.find_element(By.CSS_SELECTOR, "form button[type=submit]").click()
        assert (
            "didn't match"
            in WebDriverWait(driver, 20).until(EC.presence_of_element_located((By.CSS_SELECTOR, ".error"))).text
        )
    finally:
        driver.quit()


def test_admin_lists_the_recorded_demonstrations(browser, platform):
    sign_in(browser, platform)
    browser.get(platform.url + "/admin/annotation/demonstration/")
    rows = WebDriverWait(browser, 20).until(
        EC.presence_of_all_elements_located((By.CSS_SELECTOR, "#result_list tbody tr"))
    )
    assert len(rows) == 3  # the sample's two demos and the sample-mind2web project's recorded demonstration task
    assert all("Recorded" in row.text for row in rows)


def test_api_docs_render_offline_with_every_ingest_endpoint(browser, platform):
    browser.get(platform.url + "/api/docs/")
    WebDriverWait(browser, 30).until(EC.presence_of_element_located((By.CSS_SELECTOR, ".opblock")))
    # Swagger UI renders a long list of operations only where the window is: read it as a person scrolls it.
    seen = set()
    for _ in range(200):
        seen.update(browser.find_element(By.TAG_NAME, "body").text.splitlines())
        if "/api/websites/" in seen or browser.execute_script(
            "window.scrollBy(0, window.innerHeight / 2);"
            "return window.scrollY + window.innerHeight >= document.body.scrollHeight"
        ):
            break
    WebDriverWait(browser, 10).until(lambda d: "/api/websites/" in d.find_element(By.TAG_NAME, "body").text)
    seen.update(browser.find_element(By.TAG_NAME, "body").text.splitlines())
    for path in ("/api/recordings/", "/api/recordings/{name}/turns/", "/api/blobs/{sha256}", "/api/websites/"):
        assert path in seen


POLICY_OF_THIS_PAGE = """
fetch(location.href).then((r) => arguments[0](r.headers.get("Content-Security-Policy") || ""));
"""
SCREENSHOT_SHOWN = "const i = document.getElementById('shot'); return i.complete && i.naturalWidth > 0"


def test_pages_work_under_the_content_security_policy_without_a_single_violation(platform):
    """Each kind of page, used a little in a real browser: the policy is on and the browser refused nothing."""
    driver = make_driver()
    try:
        driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": RECORD_CSP_VIOLATIONS})
        sign_in(driver, platform)
        assert driver.execute_script("return window.__cspViolations") == []
        demo = driver.find_element(By.CSS_SELECTOR, "#recent tbody tr a").text
        pages = [
            ("/", "#projects"),
            ("/review/", "#review-list, table"),
            (f"/review/{demo}/", "#timeline li.turn"),
            ("/api/docs/", ".opblock"),
            ("/admin/annotation/demonstration/", "#result_list tbody tr"),
        ]
        for path, ready in pages:
            driver.get(platform.url + path)
            WebDriverWait(driver, 30).until(EC.presence_of_element_located((By.CSS_SELECTOR, ready)))
            if path.startswith("/review/") and path != "/review/":
                # A turn with a screenshot: it loads, its box is placed by script, its page opens in the sandbox.
                driver.find_element(By.CSS_SELECTOR, "#timeline li.turn.browser img.thumb").click()
                WebDriverWait(driver, 20).until(lambda d: d.execute_script(SCREENSHOT_SHOWN))
                driver.find_element(By.ID, "btn-page").click()
                WebDriverWait(driver, 20).until(lambda d: d.find_element(By.ID, "page-frame").is_displayed())
            assert driver.execute_script("return window.__cspViolations") == [], path
            policy = driver.execute_async_script(POLICY_OF_THIS_PAGE)
            assert "script-src 'self'" in policy, path
    finally:
        driver.quit()


def test_ten_wrong_passwords_and_the_sign_in_page_says_to_wait(platform):
    """Sign-in throttling as a person meets it (a username of its own: the count is per username and address)."""
    username = f"guesser-{uuid.uuid4().hex[:8]}"
    driver = make_driver()
    try:
        for attempt in range(11):
            driver.get(platform.url + "/accounts/login/")
            driver.find_element(By.NAME, "username").send_keys(username)
            driver.find_element(By.NAME, "password").send_keys(f"guess-{attempt}")
            driver.find_element(By.CSS_SELECTOR, "form button[type=submit]").click()
            if attempt < 10:
                WebDriverWait(driver, 20).until(EC.presence_of_element_located((By.CSS_SELECTOR, ".error")))
        message = WebDriverWait(driver, 20).until(EC.presence_of_element_located((By.ID, "throttled"))).text
        assert "Too many failed sign-ins" in message
        assert "second" in message
    finally:
        driver.quit()
