"""The review page at a laptop's 1280×800 in a real headless Chromium: the page fits the window (the document does
not scroll) and each pane scrolls inside, with at most one scrollbar each: the timeline, and the viewer with the
panels under it; on a wide screen (three columns) the viewer and the panels each scroll on their own."""

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from tests.support.browser import use_session
from tests.support.review_data import recorded_demo

pytestmark = pytest.mark.browser

# Every element of the page that scrolls: its id (or class), and whether it has a vertical / horizontal scrollbar.
SCROLLERS = """
const found = [];
for (const node of document.querySelectorAll('body *')) {
  const style = getComputedStyle(node);
  const scrolls = (value) => value === 'auto' || value === 'scroll';
  const vertical = scrolls(style.overflowY) && node.scrollHeight > node.clientHeight + 1;
  const horizontal = scrolls(style.overflowX) && node.scrollWidth > node.clientWidth + 1;
  if (vertical || horizontal) {
    const parent = node.parentElement;
    const name = node.id || node.className || `${node.tagName} in ${parent.id || parent.className}`;
    const sizes = [node.scrollWidth, node.clientWidth, node.scrollHeight, node.clientHeight];
    found.push({name, vertical, horizontal, sizes});
  }
}
return found;
"""
DOCUMENT = """
const root = document.documentElement;
return {height: root.scrollHeight, viewport: root.clientHeight, width: root.scrollWidth, wide: root.clientWidth,
        innerWidth: window.innerWidth, innerHeight: window.innerHeight};
"""


def open_review(browser, live_server, demo):
    """The demo's review page, its first browser turn with a screenshot selected and shown."""
    first = demo.turns.filter(type="browser", screenshot__isnull=False).order_by("timestamp", "seq").first()
    browser.get("about:blank")
    browser.get(f"{live_server.url}/review/{demo.name}/#t{first.pk}")
    WebDriverWait(browser, 20).until(lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-review-ready"))
    loaded = "const shot = document.getElementById('shot'); return shot.complete && shot.naturalWidth > 0"
    WebDriverWait(browser, 20).until(lambda d: d.execute_script(loaded))


def assert_fits(browser):
    page = browser.execute_script(DOCUMENT)
    assert page["height"] <= page["viewport"], page  # the document does not scroll
    assert page["width"] <= page["wide"], page
    browser.execute_script("window.scrollTo(0, 500)")
    assert browser.execute_script("return window.scrollY") == 0


def scrollers(browser) -> dict:
    return {item["name"]: item for item in browser.execute_script(SCROLLERS)}


def test_at_1280_by_800_the_page_fits_and_each_pane_scrolls_inside(browser, live_server, reviewer, alpha):
    demos = [recorded_demo(seed=7), recorded_demo(seed=8)]
    use_session(browser, live_server.url, reviewer)
    for demo in demos:  # the next demo too: a second page lays out as the first
        open_review(browser, live_server, demo)
        page = browser.execute_script(DOCUMENT)
        assert (page["innerWidth"], page["innerHeight"]) == (1280, 800)
        assert_fits(browser)
        found = scrollers(browser)
        assert set(found) == {"timeline", "review-main"}, found  # the two panes, nothing else scrolls
        for name, pane in found.items():
            assert not (pane["vertical"] and pane["horizontal"]), name  # at most one scrollbar each
            assert pane["vertical"], name
        # The screenshot stays wide enough to read, in its pane.
        assert browser.execute_script("return document.getElementById('shot').getBoundingClientRect().width") > 800
        # Walking the timeline to its end scrolls the timeline, not the page.
        turn = browser.find_element(By.CSS_SELECTOR, "#timeline li.turn.selected")
        for _ in range(30):
            turn.send_keys("j")
            turn = browser.find_element(By.CSS_SELECTOR, "#timeline li.turn.selected")
        assert browser.execute_script("return document.getElementById('timeline').scrollTop") > 0
        assert_fits(browser)


def test_on_a_wide_screen_the_viewer_and_the_panels_scroll_each_on_their_own(browser, live_server, reviewer, alpha):
    demo = recorded_demo(seed=9)
    use_session(browser, live_server.url, reviewer)
    browser.set_window_size(1920, 1000)
    try:
        open_review(browser, live_server, demo)
        assert_fits(browser)
        for name, pane in scrollers(browser).items():
            assert name in {"timeline", "viewer", "side"}, pane  # nothing else: no text box scrolls
            assert not (pane["vertical"] and pane["horizontal"]), name
    finally:
        browser.set_window_size(1280, 943)
