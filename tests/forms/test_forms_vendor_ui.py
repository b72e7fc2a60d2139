"""Templates' CDN libraries served from the vendored copies (``agents/vendor.py``), in a real headless Chromium: a
real TurkingBench task (Bootstrap 4, jQuery 3.2.1 slim, Popper from CDNs) previewed by a worker in the app's
sandboxed iframe runs the vendored jQuery and Bootstrap and gets Bootstrap's styles; the vendored files are served
with a JavaScript / CSS content type (the frames send ``nosniff``); with ``TEMPLATE_SCRIPTS = "original"`` the CDN
URLs stay. No request leaves loopback: ``FORM_TASK_ASSET_SOURCES`` is empty (the default), so only the page's own
server is allowed by the frame's CSP.
"""

import io
import urllib.request

import pytest
from django.core.management import call_command
from selenium.webdriver.common.by import By

from annotation.actions import forms
from annotation.actions.forms.frames import SANDBOX
from annotation.models import Batch, Project, Role
from tests.support.actors import make_user
from tests.support.browser import use_session, wait_for
from tests.support.forms_data import task_dir

pytestmark = pytest.mark.browser

GOAL = "Goal feasibility"  # bootstrap 4.0.0 css/js, jquery-3.2.1.slim, popper 1.12.9, Google Fonts (unmapped)
SIMPLICITY = "Simplicity rating"  # jQuery 1.4 and jQuery UI 1.8 from ajax.googleapis.com (http:)

LIBRARIES = """return [
  window.jQuery ? jQuery.fn.jquery : null,
  !!(window.jQuery && jQuery.fn.tooltip),
  typeof window.Popper,
  (function () {  // Bootstrap 4's utility class, from the vendored stylesheet
    var probe = document.createElement("div"); probe.className = "d-none"; document.body.appendChild(probe);
    var display = getComputedStyle(probe).display; probe.remove(); return display;
  })()
];"""


@pytest.fixture
def batches(transactional_db, settings):
    assert settings.FORM_TASK_ASSET_SOURCES == ""  # the default: nothing outside the page's own server
    settings.TEMPLATE_SCRIPTS = "vendored"
    project = Project.objects.create(name="tb")
    out = io.StringIO()
    call_command("import_turkingbench", str(task_dir(GOAL)), str(task_dir(SIMPLICITY)), project="tb", stdout=out)
    return project, Batch.objects.get(name=GOAL), Batch.objects.get(name=SIMPLICITY), out.getvalue()


def test_a_worker_previews_a_real_task_whose_cdn_libraries_run_from_the_vendored_copies(batches, browser, live_server):
    project, goal, simplicity, _ = batches
    for name in ("ana", "ben"):  # two workers, each in the app's sandboxed iframe
        use_session(browser, live_server.url, make_user(name, project, Role.ANNOTATOR))
        browser.get(live_server.url + f"/work/tasks/{goal.tasks.get(index=0).pk}/preview/")
        frame = wait_for(browser, lambda d: d.find_elements(By.ID, "task-frame"))[0]
        assert frame.get_attribute("sandbox") == SANDBOX
        browser.switch_to.frame(frame)
        try:
            found = wait_for(browser, lambda d: (lambda r: r if r[0] else None)(d.execute_script(LIBRARIES)))
            assert found[0].startswith("3.2.1 -ajax")  # the slim build of the CDN URL's version
            assert found[1] is True  # Bootstrap 4's plugins attached to that jQuery
            assert found[2] == "function"
            assert found[3] == "none"  # Bootstrap 4's stylesheet applies
            assert browser.execute_script("return window.origin") == "null"  # still an opaque origin
        finally:
            browser.switch_to.default_content()

    browser.get(live_server.url + forms.preview_url(simplicity.tasks.get(index=0)))  # top-level, as agents open it
    version = wait_for(browser, lambda d: d.execute_script("return window.jQuery && jQuery.ui && jQuery.fn.jquery"))
    assert version == "1.9.1"  # jQuery 1.4 is not on npm: the oldest browser build there


@pytest.mark.parametrize(
    ("path", "media"),
    [
        ("jquery@3.2.1/dist/jquery.slim.min.js", {"text/javascript", "application/javascript"}),
        ("bootstrap@4.0.0/dist/css/bootstrap.min.css", {"text/css"}),
    ],
)
def test_vendored_files_are_served_with_their_content_type(live_server, path, media):
    with urllib.request.urlopen(live_server.url + "/static/vendor/" + path) as response:
        assert response.status == 200
        assert response.headers["Content-Type"].split(";")[0] in media
        assert len(response.read()) > 10_000


def test_the_frame_points_mapped_urls_at_the_copies_and_the_original_setting_keeps_the_cdns(batches, settings, client):
    _, goal, _, imported = batches
    task = goal.tasks.get(index=0)
    page = client.get(forms.preview_url(task)).content.decode()
    assert '<script src="/static/vendor/jquery@3.2.1/dist/jquery.slim.min.js"' in page
    assert "code.jquery.com" not in page
    assert "https://fonts.googleapis.com/css?family=Open+Sans" in page  # unmapped: left as written
    csp = client.get(forms.preview_url(task)).headers["Content-Security-Policy"]
    assert "script-src 'unsafe-inline' 'unsafe-eval' 'self'" in csp

    settings.TEMPLATE_SCRIPTS = "original"
    page = client.get(forms.preview_url(task)).content.decode()
    assert "https://code.jquery.com/jquery-3.2.1.slim.min.js" in page
    assert "/static/vendor/" not in page

    # The import listed the template's external scripts, which are served locally, and warned for the rest.
    assert "fonts.googleapis.com" in imported
    assert "no vendored copy" in imported
    local = {asset["url"]: asset["local"] for asset in goal.external_scripts}
    assert local["https://code.jquery.com/jquery-3.2.1.slim.min.js"] == "jquery@3.2.1/dist/jquery.slim.min.js"
    assert local["https://fonts.googleapis.com/css?family=Open+Sans:400,400i,700,700i"] is None
