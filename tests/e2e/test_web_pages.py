"""A person signs in to the running platform in a real browser and finds the sample data and the API docs."""

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import WebDriverWait

from tests.e2e.browser import make_driver, sign_in_form

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def sign_in(browser, platform):
    credentials = platform.credentials()
    sign_in_form(browser, platform.url, credentials["username"], credentials["password"])


def test_admin_signs_in_and_sees_the_sample_project(browser, platform):
    sign_in(browser, platform)
    rows = browser.find_elements(By.CSS_SELECTOR, "#projects tbody tr")
    assert any("sample" in row.text and row.text.strip().endswith("2") for row in rows)
    assert len(browser.find_elements(By.CSS_SELECTOR, "#recent tbody tr")) == 2


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
    assert len(rows) == 2
    assert all("Recorded" in row.text for row in rows)


def test_api_docs_render_offline_with_every_ingest_endpoint(browser, platform):
    browser.get(platform.url + "/api/docs/")
    WebDriverWait(browser, 30).until(EC.presence_of_element_located((By.CSS_SELECTOR, ".opblock")))
    text = browser.find_element(By.TAG_NAME, "body").text
    for path in ("/api/recordings/", "/api/recordings/{name}/turns/", "/api/blobs/{sha256}"):
        assert path in text
