"""The vendored template libraries (``agents/vendor.py``): the URL map points at committed files with their
licences, templates are rewritten (and only mapped URLs), the real templates' external scripts are listed, and the
agents' loopback server answers the copies with their content type."""

import json
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from agents import vendor
from agents.server import serve
from tests.support.agents_data import real_data

ROOT = Path(__file__).resolve().parents[2]


def test_every_mapped_file_is_committed_with_its_package_licence_and_pinned_in_package_json():
    for local in vendor.URL_MAP.values():
        assert (vendor.VENDOR_DIR / local).is_file(), local
    pinned = json.loads((ROOT / "package.json").read_text())["devDependencies"]
    for folder, (alias, files) in vendor.PACKAGES.items():
        name, version = folder.rsplit("@", 1)
        assert pinned[alias] == f"npm:{name}@{version}"  # exact version, no range
        licence = [f for f in files if "licen" in f.lower() or f == "package.json"]
        assert licence, folder
        assert all((vendor.VENDOR_DIR / folder / f).is_file() for f in licence), folder


def test_rewrite_points_mapped_urls_at_the_copies_and_leaves_the_rest():
    template = (
        '<link crossorigin="anonymous" href="https://maxcdn.bootstrapcdn.com/bootstrap/3.0.3/css/bootstrap.min.css"'
        ' integrity="sha384-x" rel="stylesheet">\n'
        "<script src='//code.jquery.com/jquery-3.2.1.slim.min.js'></script>\n"
        '<script src="https://assets.crowd.aws/crowd-html-elements.js"></script>\n'
        '<script src="local.js"></script><a href="https://code.jquery.com/jquery-3.2.1.slim.min.js">a link</a>'
    )
    rewritten = vendor.rewrite(template)
    assert '<link href="/static/vendor/bootstrap@3.1.1/dist/css/bootstrap.min.css" rel="stylesheet">' in rewritten
    assert "<script src='/static/vendor/jquery@3.2.1/dist/jquery.slim.min.js'></script>" in rewritten
    assert '<script src="https://assets.crowd.aws/crowd-html-elements.js"></script>' in rewritten
    assert '<a href="https://code.jquery.com/jquery-3.2.1.slim.min.js">' in rewritten  # not a script or stylesheet
    assert vendor.rewrite(template, vendor.ORIGINAL) == template
    with pytest.raises(ValueError, match="vendored, original"):
        vendor.rewrite(template, "cdn")
    assert vendor.external_assets(template) == [
        {
            "url": "https://maxcdn.bootstrapcdn.com/bootstrap/3.0.3/css/bootstrap.min.css",
            "kind": "style",
            "local": "bootstrap@3.1.1/dist/css/bootstrap.min.css",
        },
        {
            "url": "//code.jquery.com/jquery-3.2.1.slim.min.js",
            "kind": "script",
            "local": "jquery@3.2.1/dist/jquery.slim.min.js",
        },
        {"url": "https://assets.crowd.aws/crowd-html-elements.js", "kind": "script", "local": None},
    ]


def test_the_real_templates_libraries_are_served_locally_except_fonts_and_mturk_scripts():
    data = real_data()
    unmapped, with_assets = set(), 0
    for name in data.task_names():
        assets = vendor.external_assets(data.task(name).template)
        with_assets += bool(assets)
        unmapped |= {asset["url"].split("/")[2] for asset in assets if asset["local"] is None}
        page = data.task(name).render_page(0)
        assert not any(asset["url"] in page for asset in assets if asset["local"])
    assert with_assets == 26
    assert unmapped == {"fonts.googleapis.com", "assets.crowd.aws", "s3.amazonaws.com", "livejs.com"}


def test_the_loopback_server_answers_the_copies_with_their_content_type():
    data = real_data()
    with serve(data) as pages:
        for path, media in [
            ("jquery@3.2.1/dist/jquery.slim.min.js", "text/javascript"),
            ("bootstrap@3.3.7/dist/css/bootstrap.min.css", "text/css"),
            ("bootstrap@3.3.7/dist/fonts/glyphicons-halflings-regular.woff", "font/woff"),
        ]:
            with urllib.request.urlopen(pages.base_url + vendor.VENDOR_URL + path) as response:
                assert response.headers["Content-Type"].split(";")[0] in {media, "application/javascript"}
                assert response.headers["X-Content-Type-Options"] == "nosniff"
                assert response.read() == (vendor.VENDOR_DIR / path).read_bytes()
        for bad in ("../../manage.py", "%2e%2e/%2e%2e/manage.py", "nothing.js", ""):
            with pytest.raises(urllib.error.HTTPError) as refused:
                urllib.request.urlopen(pages.base_url + vendor.VENDOR_URL + bad)
            assert refused.value.code == 404


# A template whose only field is made by jQuery, loaded from a CDN (as 17 of 30 real templates load theirs).
JQUERY_TEMPLATE = """<script src="https://code.jquery.com/jquery-3.2.1.min.js"></script>
<p>${question}</p><div id="slot"></div>
<script>$(function () { $("#slot").append('<input type="text" name="answer">'); });</script>"""


@pytest.mark.browser
def test_the_agents_browser_runs_the_vendored_jquery_and_the_oracle_scores_the_field_it_makes(tmp_path):
    from agents.browser import make_driver
    from agents.harness import run
    from agents.solvers import Oracle
    from agents.turkle import Dataset
    from tests.support.agents_data import write_task

    write_task(tmp_path, "jQuery task", JQUERY_TEMPLATE, ["question", "Answer.answer"], [["Say hi", "hello"]])
    data = Dataset(tmp_path)
    driver = make_driver()  # loopback only: the CDN is unreachable, as in tests and closed deployments
    try:
        scores = {}
        for mode in (vendor.VENDORED, vendor.ORIGINAL):
            with serve(data, mode) as pages:
                result = run(driver, Oracle(0), [data.task("jQuery task")], pages.url).as_dict()
            scores[mode] = result
    finally:
        driver.quit()
    assert scores[vendor.VENDORED]["instances"][0]["score"] == 1.0
    assert scores[vendor.VENDORED]["fields"][0]["field"] == "answer"
    assert scores[vendor.ORIGINAL]["instances"][0]["score"] == 0.0  # no jQuery: the field never exists
    assert scores[vendor.ORIGINAL]["skipped"][0]["reason"] == "not on the page"
