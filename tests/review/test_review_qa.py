"""What a reviewer meets day to day, in a real headless Chromium: the acted element's box on another frame, an
undo refused because a later edit changed the same thing, "reload latest" after a conflict keeping the turn,
buttons disabled while a write is in flight, honest empty states, focus after keyboard actions, a 1024 px window."""

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import WebDriverWait

from annotation.actions import review as actions
from annotation.models import Edit, Turn, TurnType
from tests.support.browser import use_session
from tests.support.review_ui import item, keys, open_page, revision_of, timeline_ids, wait_revision

pytestmark = pytest.mark.browser

BOX = {"x": 40, "y": 60, "width": 200, "height": 50}


@pytest.fixture
def review(browser, live_server, reviewer, demo):
    """The browser signed in as the reviewer, on the demo's review page."""
    use_session(browser, live_server.url, reviewer)
    open_page(browser, live_server, demo)
    return browser


def boxed_turn_with_frames(demo) -> Turn:
    """A click with a recorded element box and two frames captured around it (as ingest would store it)."""
    framed = Turn.objects.get(demonstration=demo, client_id="framed-turn")
    element = {"tagName": "BUTTON", "textContent": "Book now", "bbox": BOX}
    return Turn.objects.create(
        demonstration=demo, client_id="boxed-turn", seq=framed.seq + 1, type=TurnType.BROWSER,
        timestamp=framed.timestamp + 1, intent="click", url=framed.url, viewport_width=1280, viewport_height=800,
        arguments={"element": element, "metadata": {"url": framed.url}}, screenshot_id=framed.screenshot_id,
        frames=framed.frames, content_sha256="0" * 64,
    )  # fmt: skip


def selected_id(browser):
    return int(browser.find_element(By.CSS_SELECTOR, "#timeline li.turn.selected").get_attribute("data-id"))


def shown(browser, element_id):
    return browser.find_element(By.ID, element_id).is_displayed()


def test_the_box_is_solid_on_the_actions_screenshot_and_dashed_with_a_legend_on_another_frame(
    review, demo, reviewer, live_server
):
    turn = boxed_turn_with_frames(demo)
    open_page(review, live_server, demo, f"#t{turn.pk}")
    box = WebDriverWait(review, 20).until(EC.visibility_of_element_located((By.ID, "box")))
    assert "elsewhere" not in box.get_attribute("class")
    assert "moment of the action" in review.find_element(By.ID, "box-legend").text
    actions.do_choose_screenshot(reviewer, demo, 0, turn.pk, turn.frames[0]["screenshot"])
    open_page(review, live_server, demo, f"#t{turn.pk}")
    box = WebDriverWait(review, 20).until(EC.visibility_of_element_located((By.ID, "box")))
    assert "elsewhere" in box.get_attribute("class")
    assert box.value_of_css_property("border-top-style") == "dashed"
    legend = review.find_element(By.ID, "box-legend")
    assert legend.is_displayed()
    assert "Dashed box" in legend.text
    assert "may have moved" in legend.text
    shot = review.find_element(By.ID, "shot").rect
    scale = shot["width"] / 1280
    assert abs(box.rect["x"] - shot["x"] - BOX["x"] * scale) <= 4  # still the recorded place, scaled


def test_previewing_a_frame_shows_it_with_the_dashed_box_and_leaving_restores_the_chosen_one(review, demo, live_server):
    from selenium.webdriver.common.action_chains import ActionChains

    turn = boxed_turn_with_frames(demo)
    open_page(review, live_server, demo, f"#t{turn.pk}")
    WebDriverWait(review, 20).until(EC.visibility_of_element_located((By.ID, "box")))
    frame = review.find_elements(By.CSS_SELECTOR, "#frames button.frame")[2]
    ActionChains(review).move_to_element(frame).perform()
    shot = review.find_element(By.ID, "shot")
    assert shot.get_attribute("src").endswith(turn.frames[1]["screenshot"])
    WebDriverWait(review, 20).until(lambda d: "elsewhere" in d.find_element(By.ID, "box").get_attribute("class"))
    assert review.find_element(By.ID, "box").is_displayed()
    note = review.find_element(By.ID, "preview-note")
    assert note.is_displayed()
    assert "not chosen" in note.text
    ActionChains(review).move_to_element(review.find_element(By.ID, "task")).perform()
    assert shot.get_attribute("src").endswith(turn.screenshot_id)
    WebDriverWait(review, 20).until(lambda d: "elsewhere" not in d.find_element(By.ID, "box").get_attribute("class"))
    assert not note.is_displayed()
    assert revision_of(review) == 0  # looking is not choosing


def test_an_undo_refused_by_a_later_edit_points_at_that_edit(review, demo, reviewer, live_server):
    turn = Turn.objects.filter(demonstration=demo, type=TurnType.BROWSER).order_by("seq")[1]
    delete = actions.do_delete_turn(reviewer, demo, 0, turn.pk)
    restore = actions.do_restore_turn(reviewer, demo, 1, turn.pk)
    open_page(review, live_server, demo, f"#t{turn.pk}")
    review.find_element(By.CSS_SELECTOR, f"#history button.undo[data-edit='{delete.pk}']").click()
    message = WebDriverWait(review, 20).until(EC.visibility_of_element_located((By.ID, "message")))
    assert f"Undo edit #{restore.pk} first" in message.text
    assert "deletion of turn" in message.text
    assert not review.find_elements(By.ID, "btn-reload")  # reloading would not help: undoing #restore would
    blocking = review.find_element(By.CSS_SELECTOR, "#history li.blocking")
    assert blocking.get_attribute("data-edit") == str(restore.pk)
    assert review.switch_to.active_element.get_attribute("data-edit") == str(restore.pk)
    assert revision_of(review) == 2
    review.switch_to.active_element.send_keys(Keys.ENTER)  # undo the later edit first ...
    wait_revision(review, 3)
    assert "deleted" in item(review, turn).get_attribute("class")
    review.find_element(By.CSS_SELECTOR, f"#history button.undo[data-edit='{delete.pk}']").click()
    wait_revision(review, 4)  # ... then the earlier one is allowed
    assert Edit.objects.filter(undoes=delete).exists()
    assert "deleted" not in item(review, turn).get_attribute("class")


def test_reload_latest_after_a_conflict_keeps_the_selected_turn(review, demo, reviewer):
    ids = timeline_ids(review)
    item(review, Turn.objects.get(pk=ids[5])).click()
    actions.do_comment(reviewer, demo, 0, "saved elsewhere meanwhile")
    keys(review, "d")
    reload = WebDriverWait(review, 20).until(EC.element_to_be_clickable((By.ID, "btn-reload")))
    assert "Reload latest" in reload.text
    assert review.switch_to.active_element == reload
    reload.click()
    wait_revision(review, 1)
    assert selected_id(review) == ids[5]
    assert "saved elsewhere meanwhile" in review.find_element(By.ID, "comments").text
    assert not Edit.objects.filter(demonstration=demo, kind="delete").exists()


def test_buttons_are_disabled_while_a_write_is_in_flight(review, demo):
    review.execute_script(
        """const realFetch = window.fetch;  // hold requests back until the test lets them go
        const held = new Promise((resolve) => { window.releaseFetch = resolve; });
        window.fetch = (...args) => held.then(() => realFetch(...args));"""
    )
    review.find_element(By.ID, "btn-delete").click()
    assert review.find_element(By.TAG_NAME, "body").get_attribute("data-busy") == "true"
    assert review.find_element(By.ID, "saving").text == "Saving…"
    enabled = "return [...document.querySelectorAll('#review button')].filter((b) => !b.disabled).map((b) => b.id)"
    assert review.execute_script(enabled) == []
    keys(review, "d")  # a second press while the first is on its way sends nothing
    review.execute_script("document.getElementById('btn-delete').click()")
    review.execute_script("window.releaseFetch()")
    wait_revision(review, 1)
    assert Edit.objects.filter(demonstration=demo).count() == 1


def test_chat_turns_and_turns_without_frames_say_so(review, demo):
    chat = Turn.objects.filter(demonstration=demo, type=TurnType.CHAT).order_by("seq").first()
    item(review, chat).click()
    assert not shown(review, "shot")  # no broken-image icon
    assert "chat turn" in review.find_element(By.ID, "no-shot").text
    browser_turn = Turn.objects.filter(demonstration=demo, type=TurnType.BROWSER, frames=[]).exclude(screenshot=None)
    item(review, browser_turn.order_by("seq").first()).click()
    # the image has no size until it has loaded (Selenium counts a 0x0 element as not displayed)
    WebDriverWait(review, 20).until(EC.visibility_of_element_located((By.ID, "shot")))
    assert not shown(review, "no-shot")
    assert "No other frames" in review.find_element(By.ID, "no-frames").text


def test_page_html_button_says_what_it_does_and_escape_returns_to_the_timeline(review, demo):
    turn = Turn.objects.filter(demonstration=demo, page__isnull=False).order_by("seq").first()
    item(review, turn).click()
    button = review.find_element(By.ID, "btn-page")
    keys(review, "p")
    assert (button.text, button.get_attribute("aria-pressed")) == ("Hide page HTML", "true")
    assert shown(review, "page-frame")
    keys(review, "p")
    assert (button.text, button.get_attribute("aria-pressed")) == ("Page HTML", "false")
    chat = Turn.objects.filter(demonstration=demo, type=TurnType.CHAT).order_by("seq").first()
    item(review, chat).click()
    keys(review, "e")
    assert review.switch_to.active_element.get_attribute("id") == "text-input"
    review.switch_to.active_element.send_keys(Keys.ESCAPE)
    assert review.switch_to.active_element.get_attribute("id") == f"t{chat.pk}"
    keys(review, "j")  # the timeline keys work again
    assert selected_id(review) != chat.pk


def test_a_1024_px_window_has_no_horizontal_scrolling(review, demo, live_server):
    review.set_window_size(1024, 800)
    try:
        open_page(review, live_server, demo)
        width = review.execute_script("return [document.documentElement.scrollWidth, window.innerWidth]")
        assert width[0] <= width[1]
        for panel in ("timeline", "shot", "workflow", "history", "metadata"):
            element = review.find_element(By.ID, panel)
            assert element.rect["x"] + element.rect["width"] <= width[1], panel
        review.execute_script("document.getElementById('quality').scrollIntoView()")
        viewer, quality = review.find_element(By.ID, "viewer").rect, review.find_element(By.ID, "quality").rect
        assert viewer["y"] + viewer["height"] <= quality["y"]  # the viewer does not slide over the panels below
    finally:
        review.set_window_size(1280, 943)


def test_the_timeline_is_one_tab_stop_on_the_selected_turn(review, demo):
    ids = timeline_ids(review)
    keys(review, "jj")
    tabbable = review.find_elements(By.CSS_SELECTOR, "#timeline li.turn[tabindex='0']")
    assert [int(li.get_attribute("data-id")) for li in tabbable] == [ids[2]]
    assert tabbable[0].get_attribute("aria-current") == "true"
    review.find_element(By.ID, "btn-delete").send_keys(Keys.SHIFT, Keys.TAB)  # one Shift+Tab from the tools
    assert review.switch_to.active_element.get_attribute("data-id") == str(ids[2])  # lands on the selected turn


def test_reload_latest_keeps_what_the_reviewer_had_typed(review, demo, reviewer):
    chat = Turn.objects.filter(demonstration=demo, type=TurnType.CHAT).order_by("seq")[1]
    item(review, chat).click()
    keys(review, "e")
    field = review.find_element(By.ID, "text-input")
    field.clear()
    field.send_keys("A long careful rewrite")
    review.find_element(By.ID, "comment-text").send_keys("Why two searches?")
    actions.do_comment(reviewer, demo, 0, "saved elsewhere meanwhile")
    field.send_keys(Keys.ENTER)
    WebDriverWait(review, 20).until(EC.element_to_be_clickable((By.ID, "btn-reload"))).click()
    wait_revision(review, 1)
    assert selected_id(review) == chat.pk
    assert review.find_element(By.ID, "text-input").get_attribute("value") == "A long careful rewrite"
    assert review.find_element(By.ID, "comment-text").get_attribute("value") == "Why two searches?"
    assert "still in the form" in review.find_element(By.ID, "message").text
    assert chat.utterance in item(review, chat).text  # nothing was saved behind the reviewer's back
    review.find_element(By.ID, "btn-save-text").click()
    wait_revision(review, 2)
    assert "A long careful rewrite" in item(review, chat).text
    assert not review.find_element(By.ID, "message").is_displayed()  # the draft is used once


def test_the_list_fits_a_1024_px_window(review, live_server):
    review.set_window_size(1024, 800)
    try:
        review.get(live_server.url + "/review/")
        wrap = review.find_element(By.CSS_SELECTOR, ".table-wrap")
        assert review.execute_script("return arguments[0].scrollWidth <= arguments[0].clientWidth", wrap)
        assert review.execute_script("return document.documentElement.scrollWidth <= window.innerWidth")
    finally:
        review.set_window_size(1280, 943)
