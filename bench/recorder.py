"""Recorder benchmark: the content script's capture cost per action on a large page, in headless Chromium.

Per action the content script (``recorder_extension/content/capture.js``) serialises the page with its uids and
form state and measures every element's box (``WebTasks.dom.capturePage``), then describes the acted element
(``WebTasks.dom.elementInfo``). Here ``lib/constants.js`` and ``lib/dom.js`` (with its parts ``lib/privacy.js``
and ``lib/serialize.js``) are injected into a generated page of about 2,000 elements (served by a local HTTP
server) and those two calls are timed with ``performance.now`` inside the page, for N actions on different
elements. The first call, which stamps every uid, is timed apart
(``first_capture_ms``) and not in the percentiles. ``bytes_per_action`` is what one action stores besides its
screenshot: the page HTML plus the bboxes JSON (UTF-8 bytes).
"""

import statistics

from tests.support.browser import make_driver
from tests.support.recorder_harness import EXTENSION_DIR, fixture_servers

FULL = {"elements": 2000, "iterations": 50}
QUICK = {"elements": 300, "iterations": 8}

MEASURE = """
const [iterations] = arguments;
const dom = globalThis.WebTasks.dom;
const opts = {viewport: {width: innerWidth, height: innerHeight}, privateSelectors: []};
const targets = Array.from(document.querySelectorAll("button, a, input"));
const encoder = new TextEncoder();
function action(i) {
  const started = performance.now();
  const page = dom.capturePage(document, opts);
  const element = dom.elementInfo(targets[(i * 7) % targets.length], opts);
  const ms = performance.now() - started;
  const html = encoder.encode(page.html).length;
  const boxes = encoder.encode(JSON.stringify(page.bboxes)).length;
  return {ms, html, boxes, bytes: html + boxes, count: Object.keys(page.bboxes).length, element: element.tagName};
}
const first = action(0);
const runs = [];
for (let i = 1; i <= iterations; i++) runs.push(action(i));
return {first, runs, elements: document.getElementsByTagName("*").length};
"""


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def inject_capture_functions(driver) -> None:
    """Load the content script's own DOM library (classic scripts defining ``globalThis.WebTasks``)."""
    for name in ("lib/constants.js", "lib/privacy.js", "lib/serialize.js", "lib/dom.js"):
        driver.execute_script((EXTENSION_DIR / name).read_text())
    assert driver.execute_script("return typeof globalThis.WebTasks?.dom?.capturePage") == "function"


def run(quick: bool = False) -> dict:
    spec = QUICK if quick else FULL
    driver = make_driver()
    try:
        with fixture_servers() as (base, _):
            driver.get(f"{base}/generated.html?elements={spec['elements']}")
            inject_capture_functions(driver)
            result = driver.execute_script(MEASURE, spec["iterations"])
    finally:
        driver.quit()
    times = [run["ms"] for run in result["runs"]]
    sizes = [run["bytes"] for run in result["runs"]]
    return {
        "elements": result["elements"],
        "actions": len(times),
        "capture_ms_p50": round(statistics.median(times), 2),
        "capture_ms_p95": round(percentile(times, 0.95), 2),
        "first_capture_ms": round(result["first"]["ms"], 2),
        "bytes_per_action": round(statistics.mean(sizes)),
        "html_bytes_per_action": round(statistics.mean(run["html"] for run in result["runs"])),
        "bboxes_bytes_per_action": round(statistics.mean(run["boxes"] for run in result["runs"])),
        "boxes_per_action": result["runs"][0]["count"],
    }


if __name__ == "__main__":
    import json
    import sys

    print(json.dumps(run(quick="--quick" in sys.argv), indent=2))
