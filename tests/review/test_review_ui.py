"""A reviewer curates a recorded demo in a real headless Chromium against a live server: reorders by drag and
drop and by keyboard, edits text and a change turn's value, changes a turn's target, deletes and undoes, marks a
turn invalid, picks another screenshot, validates the demo; recorded page HTML is shown in a sandbox where its
scripts do not run; a screenshot of the page."""

import pytest
from PIL import Image
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import WebDriverWait

from annotation.actions import do_store_blob_bytes
from annotation.models import DemoStatus, Turn, TurnType
from tests.support.browser import text_of, use_session
from tests.support.review_ui import (
    item,
    keys,
    open_page,
    revision_of,
    timeline_ids,
    wait_revision,
    wait_shot_loaded,
)
from workers.exports.dataset import export_timeline

pytestmark = pytest.mark.browser

HOSTILE_PAGE = (
    b'<html><body><p id="static">Recorded page</p>'
    b"<script>document.body.insertAdjacentHTML('beforeend', '<p id=\"ran\">script ran</p>');"
    b"try { parent.document.title = 'pwned'; } catch (e) {}</script>"
    b"<img src=\"x\" onerror=\"document.body.insertAdjacentHTML('beforeend', '<p id=ran2>ran</p>')\"></body></html>"
)


@pytest.fixture
def review(browser, live_server, reviewer, demo):
    """The browser signed in as the reviewer, on the demo's review page; left on about:blank after the test, so
    that no request of the page (it polls for changes) holds a table while the database is emptied for the next
    (a TRUNCATE deadlocked with one under load)."""
    use_session(browser, live_server.url, reviewer)
    open_page(browser, live_server, demo)
    yield browser
    browser.get("about:blank")


def wait_status(browser, label):
    """The page (reloaded after a workflow transition) shows ``label`` as the demo's status."""
    WebDriverWait(browser, 20).until(lambda d: label in (text_of(d, "status") or ""))
    WebDriverWait(browser, 20).until(lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-review-ready"))


def exported(demo):
    demo.refresh_from_db()
    return {t.key: t for t in export_timeline(demo)}


def drag(browser, source, target):
    """HTML5 drag and drop as the browser dispatches it (WebDriver's pointer actions do not start native DnD)."""
    browser.execute_script(
        """const [source, target] = arguments; const data = new DataTransfer();
        for (const [node, type] of [[source, 'dragstart'], [target, 'dragover'], [target, 'drop'], [source, 'dragend']])
          node.dispatchEvent(new DragEvent(type, {bubbles: true, cancelable: true, dataTransfer: data}));""",
        source,
        target,
    )


def test_keyboard_navigation_moves_the_selection_and_the_viewer(review, demo):
    ids = timeline_ids(review)

    def selected():
        return int(review.find_element(By.CSS_SELECTOR, "#timeline li.turn.selected").get_attribute("data-id"))

    assert selected() == ids[0]
    keys(review, "jjj")
    assert selected() == ids[3]
    keys(review, Keys.ARROW_UP)
    keys(review, "k")
    assert selected() == ids[1]
    keys(review, Keys.ARROW_DOWN)
    turn = Turn.objects.get(pk=ids[2])
    assert turn.screenshot_id
    assert review.find_element(By.ID, "shot").get_attribute("src").endswith(turn.screenshot_id)
    assert f"Turn 2 · {turn.intent or turn.speaker}" == review.find_element(By.ID, "selected-label").text


def test_drag_and_keyboard_reorder(review, demo):
    ids = timeline_ids(review)
    drag(review, review.find_element(By.ID, f"t{ids[4]}"), review.find_element(By.ID, f"t{ids[1]}"))
    wait_revision(review, 1)
    assert timeline_ids(review)[:3] == [ids[0], ids[4], ids[1]]
    assert review.find_element(By.CSS_SELECTOR, "li.turn.selected").get_attribute("data-id") == str(ids[4])
    keys(review, "J")  # Shift+J moves the selected turn down
    wait_revision(review, 2)
    assert timeline_ids(review)[:3] == [ids[0], ids[1], ids[4]]
    order = [Turn.objects.get(pk=pk).client_id for pk in timeline_ids(review)]
    assert list(exported(demo)) == order


def test_edit_text(review, demo):
    turn = Turn.objects.filter(demonstration=demo, type=TurnType.CHAT).order_by("seq")[1]
    item(review, turn).click()
    keys(review, "e")
    field = review.find_element(By.ID, "text-input")
    assert review.switch_to.active_element == field
    field.clear()
    field.send_keys("Please book the cheaper one", Keys.ENTER)
    wait_revision(review, 1)
    assert "Please book the cheaper one" in item(review, turn).text
    assert exported(demo)[turn.client_id].utterance == "Please book the cheaper one"


def test_edit_a_change_turns_value(review, demo):
    turn = Turn.objects.filter(demonstration=demo, intent="change").order_by("seq").first()
    item(review, turn).click()
    keys(review, "e")
    field = review.find_element(By.ID, "text-input")
    assert field.get_attribute("value") == turn.arguments["value"]
    field.clear()
    field.send_keys("Second option", Keys.ENTER)
    wait_revision(review, 1)
    assert exported(demo)[turn.client_id].arguments["value"] == "Second option"


def test_change_a_turns_target_from_the_keyboard(review, demo):
    """t opens the picker on the filter; typing narrows the page's elements, the arrow focuses one (its box drawn on
    the screenshot), Enter makes it the target; the exported turn acts on it."""
    clicks = Turn.objects.filter(demonstration=demo, intent="click").exclude(page=None).order_by("seq")
    turn = next(t for t in clicks if t.element_uid)
    item(review, turn).click()
    wait_shot_loaded(review)
    keys(review, "t")
    options = "#target-list button.target-option"
    WebDriverWait(review, 20).until(lambda d: len(d.find_elements(By.CSS_SELECTOR, options)) > 1)
    search = review.find_element(By.ID, "target-search")
    assert review.switch_to.active_element == search
    assert review.find_element(By.CSS_SELECTOR, f"{options}.current").get_attribute("data-uid") == turn.element_uid
    listed = [(b.get_attribute("data-uid"), b.text) for b in review.find_elements(By.CSS_SELECTOR, options)]
    chosen = next(uid for uid, text in listed if uid != turn.element_uid and not text.startswith(("<html", "<head")))
    search.send_keys(chosen)
    WebDriverWait(review, 20).until(lambda d: len(d.find_elements(By.CSS_SELECTOR, options)) == 1)
    search.send_keys(Keys.ARROW_DOWN)
    assert review.switch_to.active_element.get_attribute("data-uid") == chosen
    assert review.find_element(By.ID, "target-box").get_attribute("hidden") is None
    review.switch_to.active_element.send_keys(Keys.ENTER)
    wait_revision(review, 1)
    assert exported(demo)[turn.client_id].arguments["element"]["attributes"]["data-webtasks-id"] == chosen
    keys(review, "t")  # Escape closes the picker and gives the focus back to its button
    WebDriverWait(review, 20).until(lambda d: d.switch_to.active_element.get_attribute("id") == "target-search")
    review.switch_to.active_element.send_keys(Keys.ESCAPE)
    assert review.find_element(By.ID, "target-picker").get_attribute("hidden") is not None
    assert review.switch_to.active_element.get_attribute("id") == "btn-target"


def test_delete_and_undo(review, demo):
    turn = Turn.objects.filter(demonstration=demo, type=TurnType.BROWSER).order_by("seq")[2]
    item(review, turn).click()
    keys(review, "d")
    wait_revision(review, 1)
    assert "deleted" in item(review, turn).get_attribute("class")
    assert turn.client_id not in exported(demo)
    review.find_element(By.CSS_SELECTOR, "#history button.undo").click()
    wait_revision(review, 2)
    assert "deleted" not in item(review, turn).get_attribute("class")
    assert "(undid #" in review.find_element(By.ID, "history").text
    assert turn.client_id in exported(demo)
    redo = review.find_element(By.CSS_SELECTOR, "#history button.undo")  # only the undo is undoable now
    assert redo.text == "Redo"
    redo.click()
    wait_revision(review, 3)
    assert "deleted" in item(review, turn).get_attribute("class")
    assert turn.client_id not in exported(demo)


def test_mark_invalid(review, demo):
    turn = Turn.objects.filter(demonstration=demo, type=TurnType.BROWSER).order_by("seq")[0]
    item(review, turn).click()
    review.find_element(By.ID, "btn-valid").click()
    wait_revision(review, 1)
    assert "invalid" in item(review, turn).get_attribute("class")
    assert exported(demo)[turn.client_id].screenshot_status == "broken"


def test_pick_another_screenshot_and_accept_suggestions(review, demo, live_server):
    from workers.review.realign import store_suggestions

    turn = Turn.objects.get(demonstration=demo, client_id="framed-turn")
    item(review, turn).click()
    wait_shot_loaded(review)
    shot = review.find_element(By.ID, "shot")
    assert abs(shot.size["height"] / shot.size["width"] - turn.viewport_height / turn.viewport_width) < 0.01
    frames = review.find_elements(By.CSS_SELECTOR, "#frames button.frame")
    assert len(frames) == 3
    frames[1].click()
    wait_revision(review, 1)
    assert exported(demo)[turn.client_id].screenshot == turn.frames[0]["screenshot"]
    chosen = review.find_element(By.CSS_SELECTOR, "#frames button.frame.chosen")
    assert chosen.get_attribute("data-sha") == turn.frames[0]["screenshot"]
    assert review.find_element(By.ID, "shot").get_attribute("src").endswith(turn.frames[0]["screenshot"])
    store_suggestions(demo)  # what the realign task does
    open_page(review, live_server, demo, f"#t{turn.pk}")
    assert "(suggested)" in review.find_element(By.CSS_SELECTOR, "#frames button.frame.suggested").text
    review.find_element(By.ID, "btn-accept-suggestions").click()
    wait_revision(review, 2)
    assert exported(demo)[turn.client_id].screenshot == turn.frames[1]["screenshot"]


def confirm(browser):
    """Accept the confirmation a decision asks for."""
    WebDriverWait(browser, 20).until(EC.alert_is_present())
    browser.switch_to.alert.accept()


def test_accept_the_demo(review, demo, live_server):
    review.find_element(By.ID, "btn-validate").click()
    confirm(review)
    WebDriverWait(review, 20).until(EC.url_to_be(f"{live_server.url}/review/"))  # the next one: none is left
    assert f"Validated {demo.name}" in review.find_element(By.ID, "messages").text  # the confirmation
    demo.refresh_from_db()
    assert demo.status == DemoStatus.VALIDATED
    open_page(review, live_server, demo)
    assert not review.find_elements(By.ID, "btn-delete")  # decided: read only until reopened


def test_question_mark_opens_the_list_of_keys_and_esc_closes_it(review, demo):
    dialog = review.find_element(By.ID, "shortcuts-dialog")
    WebDriverWait(review, 20).until(lambda d: dialog.get_attribute("data-ready") == "true")
    assert not dialog.is_displayed()
    before = timeline_ids(review)
    review.find_element(By.TAG_NAME, "body").send_keys("?")
    WebDriverWait(review, 20).until(lambda d: dialog.is_displayed())
    assert "delete / restore the step" in dialog.text
    assert "next step" in dialog.text
    dialog.send_keys("d")  # the page's keys are held back while the list is open
    dialog.send_keys(Keys.ESCAPE)
    WebDriverWait(review, 20).until(lambda d: not dialog.is_displayed())
    assert timeline_ids(review) == before
    assert revision_of(review) == 0  # nothing was deleted


def test_a_second_reviewer_gets_a_conflict_message(review, demo, reviewer):
    from annotation.actions import review as actions

    turn = Turn.objects.filter(demonstration=demo).order_by("seq")[0]
    actions.do_comment(reviewer, demo, 0, "changed elsewhere")  # someone saves while this page is open
    item(review, turn).click()
    keys(review, "d")
    message = WebDriverWait(review, 20).until(EC.visibility_of_element_located((By.ID, "message")))
    assert "changed by reviewer" in message.text
    assert review.find_element(By.ID, "btn-reload").is_displayed()
    assert turn.client_id in exported(demo)


def test_a_change_made_elsewhere_is_announced_with_a_reload(review, demo):
    from annotation.actions import review as actions
    from tests.support.actors import make_user

    colleague = make_user("colleague", demo.project, "reviewer")
    turn = Turn.objects.filter(demonstration=demo, type=TurnType.BROWSER).order_by("seq")[1]
    item(review, turn).click()
    actions.do_delete_turn(colleague, demo, 0, turn.pk)
    review.execute_script("document.dispatchEvent(new Event('visibilitychange'))")  # polls now, not in 10 s
    message = WebDriverWait(review, 20).until(EC.visibility_of_element_located((By.ID, "message")))
    assert f"This demo was changed by colleague (deleted turn {turn.seq}, at " in message.text
    assert review.switch_to.active_element.get_attribute("id") == f"t{turn.pk}"  # the notice took no focus
    review.find_element(By.ID, "btn-reload").click()
    wait_revision(review, 1)
    assert "deleted" in item(review, turn).get_attribute("class")
    assert "selected" in item(review, turn).get_attribute("class")  # still on the same turn


def test_recorded_page_scripts_do_not_run(review, demo, live_server):
    sha = do_store_blob_bytes(HOSTILE_PAGE, "text/html", demo.project)[0].sha256
    last = Turn.objects.filter(demonstration=demo).order_by("-seq").first()
    turn = Turn.objects.create(
        demonstration=demo, client_id="hostile", seq=last.seq + 1, type=TurnType.BROWSER, intent="load",
        timestamp=last.timestamp + 1, page_id=sha, content_sha256="0" * 64,
    )  # fmt: skip
    open_page(review, live_server, demo, f"#t{turn.pk}")
    review.find_element(By.ID, "btn-page").click()
    frame = review.find_element(By.ID, "page-frame")
    assert frame.get_attribute("sandbox") == ""
    review.switch_to.frame(frame)
    try:
        WebDriverWait(review, 10).until(EC.presence_of_element_located((By.ID, "static")))
        assert not review.find_elements(By.ID, "ran")
        assert not review.find_elements(By.ID, "ran2")
    finally:
        review.switch_to.default_content()
    assert review.title != "pwned"


def test_screenshot_of_the_review_page_shows_the_essentials(review, demo, tmp_path):
    turn = Turn.objects.filter(demonstration=demo, type=TurnType.BROWSER).exclude(arguments__element=None)
    turn = next(t for t in turn.order_by("seq") if t.arguments.get("element"))
    item(review, turn).click()
    wait_shot_loaded(review)
    WebDriverWait(review, 20).until(EC.visibility_of_element_located((By.ID, "box")))
    path = tmp_path / "review.png"
    assert review.save_screenshot(str(path))
    image = Image.open(path)
    assert image.size == (1280, 800)
    assert len(image.convert("RGB").getcolors(1 << 20) or []) > 50  # not blank
    for essential in ("timeline", "shot", "box", "quality", "history", "workflow", "metadata"):
        assert review.find_element(By.ID, essential).is_displayed(), essential
    box, shot = review.find_element(By.ID, "box").rect, review.find_element(By.ID, "shot").rect
    assert shot["x"] <= box["x"]
    assert box["x"] + box["width"] <= shot["x"] + shot["width"] + 1
    assert (
        len(review.find_elements(By.CSS_SELECTOR, "#timeline li.turn"))
        == Turn.objects.filter(demonstration=demo).count()
    )


def test_edit_metadata_and_return_to_the_annotator_with_a_comment(review, demo, live_server):
    form = review.find_element(By.ID, "metadata-form")
    task = form.find_element(By.NAME, "task_description")
    task.clear()
    task.send_keys("Find the cheapest hotel in Lisbon")
    form.find_element(By.NAME, "region").clear()
    form.find_element(By.NAME, "region").send_keys("Europe")
    review.find_element(By.ID, "btn-save-metadata").click()
    wait_revision(review, 1)
    assert review.find_element(By.ID, "task").text == "Find the cheapest hotel in Lisbon"
    demo.refresh_from_db()
    assert (demo.task_description, demo.region) == ("Find the cheapest hotel in Lisbon", "Europe")
    review.find_element(By.ID, "workflow-comment").send_keys("Turn 3 looks misordered")
    review.find_element(By.ID, "btn-return").click()
    confirm(review)
    WebDriverWait(review, 20).until(EC.url_to_be(f"{live_server.url}/review/"))  # the next one: none is left
    open_page(review, live_server, demo)
    wait_status(review, "Returned")
    assert "Turn 3 looks misordered" in review.find_element(By.ID, "comments").text
