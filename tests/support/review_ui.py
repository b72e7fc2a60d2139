"""Browser helpers for the review page: open it, press keys, wait for a revision or a screenshot, read the timeline."""

from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from tests.support.browser import text_of


def open_page(browser, live_server, demo, anchor=""):
    browser.get("about:blank")  # a fresh load even when only the anchor differs
    browser.get(f"{live_server.url}/review/{demo.name}/{anchor}")
    WebDriverWait(browser, 20).until(lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-review-ready"))


def wait_revision(browser, revision):
    WebDriverWait(browser, 20).until(lambda d: revision_of(d) == revision)
    WebDriverWait(browser, 20).until(lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-review-ready"))


def revision_of(browser):
    try:
        return int(text_of(browser, "revision"))
    except (TypeError, ValueError):
        return None


def timeline_ids(browser):
    return [int(li.get_attribute("data-id")) for li in browser.find_elements(By.CSS_SELECTOR, "#timeline li.turn")]


def item(browser, turn):
    return browser.find_element(By.ID, f"t{turn.pk}")


def wait_shot_loaded(browser):
    """The selected turn's screenshot has loaded (nothing in the viewer moves any more)."""
    loaded = "const shot = document.getElementById('shot'); return shot.complete && shot.naturalWidth > 0"
    WebDriverWait(browser, 20).until(lambda d: d.execute_script(loaded))


def keys(browser, text):
    browser.find_element(By.CSS_SELECTOR, "#timeline li.turn.selected").send_keys(text)
