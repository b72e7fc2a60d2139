"""The statistics and activity pages in a real headless Chromium against the running platform (its sample project):
the charts are drawn as SVG, one bar per table row scaled to the largest, with no CSP violation; the admin's
calendar heatmap is drawn."""

import pytest
from selenium.webdriver.common.by import By

from tests.support.browser import RECORD_CSP_VIOLATIONS, make_driver, sign_in_form, wait_for

pytestmark = [pytest.mark.browser, pytest.mark.processes]


@pytest.fixture(scope="module")
def driver(platform):
    started = make_driver(width=1400, height=1000)
    started.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": RECORD_CSP_VIOLATIONS})
    credentials = platform.credentials()
    sign_in_form(started, platform.url, credentials["username"], credentials["password"])
    yield started
    started.quit()


def bars(driver, key: str) -> list:
    return driver.find_elements(By.CSS_SELECTOR, f'svg.chart[data-table="{key}"] rect.bar')


def test_the_stats_page_draws_a_bar_per_row_of_its_tables(driver, platform):
    driver.get(platform.url + "/")
    sample = "//table[@id='projects']//tr[td[1][starts-with(normalize-space(.), 'sample (')]]//a[text()='stats']"
    driver.find_element(By.XPATH, sample).click()  # the WebLINX sample (beside it, the Mind2Web one)
    wait_for(driver, lambda d: d.find_elements(By.CSS_SELECTOR, 'svg.chart[data-table="intents"] rect.bar'))
    assert driver.current_url.endswith("/projects/sample/stats/")
    for key in ("intents", "review_outcomes", "weblinx_splits", "categories", "operations"):
        rows = driver.find_elements(By.CSS_SELECTOR, f"#table-{key} table tbody tr")
        drawn = bars(driver, key)
        assert len(drawn) == len(rows) > 0, key
        labels = [bar.get_attribute("data-label") for bar in drawn]
        assert labels == [row.find_element(By.CSS_SELECTOR, "td").text for row in rows], key
    statuses = {bar.get_attribute("data-label"): bar for bar in bars(driver, "review_outcomes")}
    assert float(statuses["recorded"].get_attribute("width")) == 380  # the sample's two demos are recorded
    assert float(statuses["validated"].get_attribute("width")) == 0
    widths = [float(bar.get_attribute("width")) for bar in bars(driver, "intents")]
    assert max(widths) == 380
    assert all(width > 0 for width in widths)
    assert statuses["recorded"].rect["width"] > 100  # drawn on screen, not only in the markup
    assert driver.execute_script("return document.querySelectorAll('svg.chart').length") >= 10
    assert driver.execute_script("return window.__cspViolations") == []


def test_the_activity_page_draws_the_calendar_heatmap(driver, platform):
    driver.get(platform.url + "/projects/sample/activity/")
    cells = wait_for(driver, lambda d: d.find_elements(By.CSS_SELECTOR, "figure.heatmap svg.calendar rect.day"))
    assert len(cells) >= 52 * 7
    assert any(cell.get_attribute("class") != "day l0" for cell in cells)  # the sample's recordings
    assert driver.find_element(By.ID, "pay").is_displayed()
    assert driver.execute_script("return window.__cspViolations") == []
