"""The replay tests' site (a shop whose items are fetched after load, an XHR on a click, a redirect, a form posted
to the site with a text field and a select, a thanks page fetching its data after load) and the six-step task
recorded on it with the real extension in step mode."""

from tests.support.recorder_browser import Browser, Panel, op_button, select, start_recording, stop_and_collect
from tests.support.step_site import choose_step, page_ready, text_of, type_step
from tests.support.waits import wait_until

SHOP = """<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Shop</title></head><body>
<h1>Shop</h1><ul id="items"></ul>
<p><button id="more" type="button">More</button> <span id="more-out"></span></p>
<p><a id="to-order" href="/go-order">Order</a></p>
<script>
fetch("/api/items").then(r => r.json()).then(d => {
  document.getElementById("items").innerHTML = d.items.map(i => "<li>" + i + "</li>").join("");
});
document.getElementById("more").onclick = () => {
  const x = new XMLHttpRequest();
  x.open("GET", "/api/more?page=2");
  x.onload = () => { document.getElementById("more-out").textContent = JSON.parse(x.responseText).more; };
  x.send();
};
</script></body></html>"""

ORDER = """<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Order</title></head><body>
<form id="order" method="post" action="/order">
  <p><label>Name <input id="name" name="name" autocomplete="off"></label></p>
  <p><label>Size <select id="size" name="size"><option value="s">Small</option><option value="l">Large</option>
  </select></label></p>
  <p><button id="send" type="submit">Send</button></p>
</form></body></html>"""

THANKS = """<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Thanks</title></head><body>
<h1>Thanks</h1><p id="summary">loading</p><button id="done" type="button">Done</button>
<script>
fetch("/api/summary").then(r => r.json()).then(d => { document.getElementById("summary").textContent = d.summary; });
</script></body></html>"""

PAGES = {"/shop.html": SHOP, "/order.html": ORDER, "/thanks": THANKS}
JSON_ANSWERS = {
    "/api/items": {"items": ["Red shoe", "Blue shoe"]},
    "/api/more": {"more": "Green shoe"},
    "/api/summary": {"summary": "Order of Ann"},
}
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
    select(driver, panel, "more")
    panel.operate(op_button("click"))
    wait_until(lambda: text_of(driver, "more-out") == "Green shoe", 30, message="more fetched")
    select(driver, panel, "to-order")
    panel.operate(op_button("click"))
    page_ready(driver, "/order.html", "order")
    type_step(driver, panel, "name", "Ann")
    choose_step(driver, panel, "size", "l")
    select(driver, panel, "send")
    panel.operate(op_button("click"))
    page_ready(driver, "/thanks", "summary", "Order of Ann")
    select(driver, panel, "done")
    panel.operate(op_button("click"))
    stop_and_collect(browser, live, name)
    return name
