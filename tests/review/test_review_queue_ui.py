"""Daily review work in a real headless Chromium against a live server: "Review next" → Validate (confirmed) →
the next demo opens; zoom, pan, side by side and the page's width; thumbnails and issue counts that appear while
the page is open, made by a real Celery worker (the one for the recording's finish started after the page)."""

import datetime as dt

import pytest
from django.core.cache import cache
from django.utils import timezone
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import WebDriverWait

from annotation.actions import do_finish_recording
from annotation.models import Demonstration, DemoReview, DemoStatus, Turn
from devtools.processes import celery_worker
from tests.support.browser import use_session
from tests.support.review_data import recorded_demo
from tests.support.review_ui import keys, open_page, wait_shot_loaded

pytestmark = [pytest.mark.browser, pytest.mark.processes]


def recorded_ago(demo, minutes):
    Demonstration.objects.filter(pk=demo.pk).update(recording_start=timezone.now() - dt.timedelta(minutes=minutes))


def ready(browser):
    WebDriverWait(browser, 20).until(lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-review-ready"))


def confirm(browser):
    WebDriverWait(browser, 20).until(EC.alert_is_present())
    browser.switch_to.alert.accept()


def test_the_list_shows_other_reviewers_decisions_live(browser, live_server, reviewer, alpha):
    from annotation.actions import review as actions
    from tests.support.actors import make_user

    first, second, third = recorded_demo(seed=7), recorded_demo(seed=8), recorded_demo(seed=9)
    use_session(browser, live_server.url, reviewer)
    browser.get(f"{live_server.url}/review/")

    def status_of(d, demo):
        return d.find_element(By.CSS_SELECTOR, f'#demos tr[data-name="{demo.name}"]').get_attribute("data-status")

    WebDriverWait(browser, 20).until(lambda d: status_of(d, first) == "recorded")
    browser.find_element(By.CSS_SELECTOR, f'#demos tr[data-name="{third.name}"] input.pick').click()  # a selection
    colleagues = [make_user(name, alpha, "reviewer") for name in ("vic", "val")]
    actions.do_transition(colleagues[0], first, 0, "validate")
    actions.do_transition(colleagues[1], second, 0, "reject")
    WebDriverWait(browser, 20).until(lambda d: status_of(d, first) == "validated")
    WebDriverWait(browser, 20).until(lambda d: status_of(d, second) == "rejected")
    row = browser.find_element(By.CSS_SELECTOR, f'#demos tr[data-name="{first.name}"]')
    assert row.find_element(By.CSS_SELECTOR, ".status-label").text == "Validated"
    assert "changed" in row.get_attribute("class")
    # the page was not reloaded: the selection is still there
    assert browser.find_element(By.CSS_SELECTOR, f'#demos tr[data-name="{third.name}"] input.pick').is_selected()
    assert browser.find_element(By.ID, "selected-count").text == "1 selected"


def test_review_next_then_validate_opens_the_next_demo(browser, live_server, reviewer, alpha):
    older, newer = recorded_demo(seed=7), recorded_demo(seed=8)
    recorded_ago(older, 60)
    recorded_ago(newer, 5)
    use_session(browser, live_server.url, reviewer)
    browser.get(f"{live_server.url}/review/")
    assert "2 waiting for you" in browser.find_element(By.ID, "queue-size").text
    browser.find_element(By.ID, "btn-review-next").click()
    WebDriverWait(browser, 20).until(EC.url_to_be(f"{live_server.url}/review/{older.name}/"))
    ready(browser)
    assert "held by reviewer" in browser.find_element(By.ID, "claim").text
    browser.find_element(By.ID, "btn-validate").click()
    confirm(browser)
    WebDriverWait(browser, 20).until(EC.url_to_be(f"{live_server.url}/review/{newer.name}/"))
    ready(browser)
    assert f"Validated {older.name}" in browser.find_element(By.ID, "messages").text  # the confirmation
    assert Demonstration.objects.get(pk=older.pk).status == DemoStatus.VALIDATED
    assert DemoReview.objects.get(pk=newer.pk).claimed_by == reviewer
    browser.find_element(By.ID, "btn-reject").click()
    WebDriverWait(browser, 20).until(EC.alert_is_present())
    browser.switch_to.alert.dismiss()  # changed my mind: nothing is sent
    assert Demonstration.objects.get(pk=newer.pk).status == DemoStatus.RECORDED
    browser.find_element(By.ID, "btn-reject").click()
    confirm(browser)
    WebDriverWait(browser, 20).until(EC.url_to_be(f"{live_server.url}/review/"))
    assert "Nothing left to review for you now" in browser.find_element(By.ID, "messages").text
    assert Demonstration.objects.get(pk=newer.pk).status == DemoStatus.REJECTED


def shot_rect(browser, element_id):
    return browser.execute_script(
        "const r = document.getElementById(arguments[0]).getBoundingClientRect();"
        "return {x: r.x, y: r.y, width: r.width, height: r.height};",
        element_id,
    )


def zoom_of(browser):
    return float(browser.find_element(By.ID, "shot-wrap").get_attribute("data-zoom"))


def boxed_turn_with_frames(demo) -> Turn:
    """A click with its element's box, its screenshot, and frames captured before and after it (as ingest stores
    a new turn; raw turns are never changed)."""
    last = Turn.objects.filter(demonstration=demo).order_by("-seq").first()
    shots = list(
        Turn.objects.filter(demonstration=demo).exclude(screenshot=None).values_list("screenshot_id", flat=True)
    )
    at = last.timestamp + 2
    return Turn.objects.create(
        demonstration=demo,
        client_id="boxed-turn",
        seq=last.seq + 1,
        type="browser",
        timestamp=at,
        intent="click",
        arguments={"element": {"tagName": "BUTTON", "bbox": {"x": 400, "y": 300, "width": 160, "height": 48}}},
        url=last.url,
        viewport_width=last.viewport_width,
        viewport_height=last.viewport_height,
        screenshot_id=shots[-1],
        frames=[
            {"screenshot": shots[0], "timestamp": at - 0.5, "label": "before"},
            {"screenshot": shots[1], "timestamp": at + 0.5, "label": "after"},
        ],
        content_sha256="1" * 64,
    )


def test_zoom_pan_and_side_by_side_keep_the_box_on_its_element(browser, live_server, reviewer, alpha):
    demo = recorded_demo()
    framed = boxed_turn_with_frames(demo)
    use_session(browser, live_server.url, reviewer)
    browser.set_window_size(1400, 900)
    open_page(browser, live_server, demo, f"#t{framed.pk}")
    wait_shot_loaded(browser)
    assert browser.execute_script("return document.getElementById('shot').clientWidth") >= 900  # window's width
    WebDriverWait(browser, 20).until(lambda d: d.find_element(By.ID, "box").is_displayed())
    shot, box = shot_rect(browser, "shot"), shot_rect(browser, "box")
    keys(browser, "+")
    keys(browser, "+")
    assert zoom_of(browser) == pytest.approx(1.5625, abs=1e-3)
    assert browser.find_element(By.ID, "zoom-level").text == "156%"
    zoomed_shot, zoomed_box = shot_rect(browser, "shot"), shot_rect(browser, "box")
    assert zoomed_shot["width"] == pytest.approx(shot["width"] * 1.5625, rel=0.01)
    assert zoomed_box["width"] == pytest.approx(box["width"] * 1.5625, rel=0.02)
    # the box keeps its place on the screenshot: same relative position before and after zooming
    assert (zoomed_box["x"] - zoomed_shot["x"]) / zoomed_shot["width"] == pytest.approx(
        (box["x"] - shot["x"]) / shot["width"], abs=0.01
    )
    keys(browser, Keys.SHIFT + Keys.ARROW_RIGHT)
    panned = shot_rect(browser, "shot")
    assert panned["x"] < zoomed_shot["x"]
    assert shot_rect(browser, "box")["x"] - panned["x"] == pytest.approx(zoomed_box["x"] - zoomed_shot["x"], abs=1)
    browser.find_element(By.ID, "zoom-in").click()
    assert zoom_of(browser) == pytest.approx(1.953125, abs=1e-3)
    keys(browser, "0")
    assert zoom_of(browser) == 1
    assert shot_rect(browser, "shot")["width"] == pytest.approx(shot["width"], rel=0.01)

    keys(browser, "c")  # side by side: the captured screenshot and the frames around it, each with the box
    compare = browser.find_element(By.ID, "compare")
    assert compare.is_displayed()
    figures = compare.find_elements(By.CSS_SELECTOR, "figure.compare-item")
    assert len(figures) == 1 + len(framed.frames)
    captions = [figure.find_element(By.TAG_NAME, "figcaption").text for figure in figures]
    assert [caption.split(" (")[0].split(" ✓")[0] for caption in captions] == [
        "before the action",
        "captured at the action",
        "after the action",
    ]
    assert len(compare.find_elements(By.CSS_SELECTOR, ".box.elsewhere")) == len(framed.frames)
    assert len(compare.find_elements(By.CSS_SELECTOR, ".box:not(.elsewhere)")) == 1
    assert not browser.find_element(By.ID, "shot-wrap").is_displayed()
    keys(browser, "c")
    assert browser.find_element(By.ID, "shot-wrap").is_displayed()


@pytest.mark.django_db(transaction=True)
def test_thumbnails_appear_on_the_open_page_when_the_worker_makes_them(
    browser, live_server, reviewer, alpha, worker_env, tmp_path
):
    demo = recorded_demo()
    cache.delete(f"review-work:{demo.pk}")
    use_session(browser, live_server.url, reviewer)
    open_page(browser, live_server, demo)  # enqueues thumbnails; no worker runs yet
    pending = browser.find_elements(By.CSS_SELECTOR, "img.thumb[data-pending]")
    assert pending
    assert "Thumbnails 0/" in browser.find_element(By.ID, "live-status").text
    browser.execute_script("window.notReloaded = true;")
    with celery_worker(worker_env, tmp_path / "worker.log"):
        WebDriverWait(browser, 120).until(
            lambda d: (
                not d.find_elements(By.CSS_SELECTOR, "img.thumb[data-pending]")
                # lazy images below the fold load only when scrolled to: the first is in view
                and d.execute_script("return document.querySelector('img.thumb').complete")
            )
        )
        # The suggestions are the worker's next job: waited for while the worker still runs (it was stopped before
        # they were made on a loaded CI run).
        WebDriverWait(browser, 120).until(lambda d: "suggestions are ready" in d.find_element(By.ID, "message").text)
    thumb = browser.find_element(By.CSS_SELECTOR, "img.thumb")
    assert thumb.get_attribute("src").endswith("?ready=1")
    assert browser.execute_script("return arguments[0].naturalWidth", thumb) == 320  # the WebP, not the SVG
    assert browser.execute_script("return window.notReloaded") is True


@pytest.mark.django_db(transaction=True)
def test_issue_counts_appear_in_the_open_list_when_a_finished_recording_is_checked(
    browser, live_server, reviewer, alpha, worker_env, tmp_path
):
    demo = recorded_demo()
    Demonstration.objects.filter(pk=demo.pk).update(status=DemoStatus.RECORDING, recording_end=None)
    do_finish_recording(demo)  # enqueues the worker's checks; the worker starts after the list is open
    use_session(browser, live_server.url, reviewer)
    browser.get(f"{live_server.url}/review/")
    cell = browser.find_element(By.CSS_SELECTOR, f'tr[data-name="{demo.name}"] td.issues')
    assert cell.text == "–"
    browser.execute_script("window.notReloaded = true;")
    with celery_worker(worker_env, tmp_path / "worker.log"):
        WebDriverWait(browser, 120).until(lambda d: cell.text.isdigit())
    review = DemoReview.objects.get(pk=demo.pk)
    assert int(cell.text) == len(review.quality)
    assert review.realigned
    assert browser.execute_script("return window.notReloaded") is True
