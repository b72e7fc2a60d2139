"""The replay tests' site (a shop whose items are fetched after load, an XHR on a click, a redirect, a form posted
to the site with a text field and a select, a thanks page fetching its data after load) and the six-step task
recorded on it with the real extension in step mode."""

from tests.support.recorder_browser import Browser, Panel, start_recording, stop_and_collect
from tests.support.step_site import (
    SHOP_ANSWERS,
    choose_step,
    click_step,
    fetching_page,
    page_ready,
    shop_page,
    text_of,
    type_step,
)
from tests.support.waits import wait_until

ORDER = """<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Order</title></head><body>
<form id="order" method="post" action="/order">
  <p><label>Name <input id="name" name="name" autocomplete="off"></label></p>
  <p><label>Size <select id="size" name="size"><option value="s">Small</option><option value="l">Large</option>
  </select></label></p>
  <p><button id="send" type="submit">Send</button></p>
</form></body></html>"""

PAGES = {
    "/shop.html": shop_page("order", "Order"),
    "/order.html": ORDER,
    "/thanks": fetching_page("Thanks", "summary", "/api/summary", "summary"),
}
JSON_ANSWERS = SHOP_ANSWERS | {"/api/summary": {"summary": "Order of Ann"}}
REDIRECTS = {"/go-order": "/order.html"}


def record_flow(browser: Browser, live, base: str) -> str:
    """Shop: Click More (an XHR), Click Order (a redirect); the form: Type the name, Select Large, Click Send (a
    POST answered by a redirect); the thanks page (its summary fetched after load): Click Done."""
    driver = browser.driver
    driver.get(base + "/shop.html")
    name = start_recording(browser, live, step=True, mhtml=True, mode="task")
    panel = Panel(browser.recorder)
    wait_until(lambda: not panel.quietly("document.getElementById('step').hidden"), 30, message="the step panel")
    page_ready(driver, "/shop.html", "items")
    click_step(driver, panel, "more")
    wait_until(lambda: text_of(driver, "more-out") == "Green shoe", 30, message="more fetched")
    click_step(driver, panel, "to-order")
    page_ready(driver, "/order.html", "order")
    type_step(driver, panel, "name", "Ann")
    choose_step(driver, panel, "size", "l")
    click_step(driver, panel, "send")
    page_ready(driver, "/thanks", "summary", "Order of Ann")
    click_step(driver, panel, "done")
    stop_and_collect(browser, live, name)
    return name
