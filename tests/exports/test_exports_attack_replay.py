"""Attacks on the offline replay engine (docs/mind2web.md#replay) with hostile hand-made HARs, in real headless
Chromium: recorded pages must not reach the network past the Fetch interception (WebRTC's UDP/TCP went straight
out), must not hold the browser with dialogs, and the browser must not outlive the process that started it."""

import contextlib
import http.server
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.support.rawdump import har_entry
from workers.exports.replay.engine import ReplayStep, replay_steps
from workers.exports.replay.har import Responder

pytestmark = pytest.mark.browser

BASE = "http://127.0.0.1:9"  # the discard port: nothing answers there


def page(url: str, html: str) -> dict:
    entry = har_entry(url)
    entry["response"].update(
        status=200,
        headers=[{"name": "Content-Type", "value": "text/html"}],
        content={"size": len(html), "mimeType": "text/html", "text": html},
    )
    return entry


@contextlib.contextmanager
def listeners():
    """A UDP socket, a TCP listener and an HTTP server on free loopback ports; yields (ports, did each get anything)."""
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("127.0.0.1", 0))
    tcp = socket.socket()
    tcp.bind(("127.0.0.1", 0))
    tcp.listen(5)
    hits = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            hits.append(self.path)
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()

    def received() -> dict:
        udp.setblocking(False)
        tcp.setblocking(False)
        got = {"udp": True, "tcp": True, "http": list(hits)}
        try:
            udp.recvfrom(4096)
        except BlockingIOError:
            got["udp"] = False
        try:
            tcp.accept()[0].close()
        except BlockingIOError:
            got["tcp"] = False
        return got

    ports = {"udp": udp.getsockname()[1], "tcp": tcp.getsockname()[1], "http": server.server_address[1]}
    try:
        yield ports, received
    finally:
        server.shutdown()
        udp.close()
        tcp.close()


def click_step(url: str = f"{BASE}/page.html") -> ReplayStep:
    return ReplayStep("go", "CLICK", "CLICK", "", url, tag="button", attributes={"id": "go"})


def test_webrtc_popups_and_workers_send_nothing():
    with listeners() as (ports, received):
        udp, tcp, web = ports["udp"], ports["tcp"], f"http://127.0.0.1:{ports['http']}"
        html = f"""<!doctype html><html><body><button id="go" type="button">Go</button><script>
const pc = new RTCPeerConnection({{iceServers: [{{urls: "stun:127.0.0.1:{udp}"}},
  {{urls: "turn:127.0.0.1:{tcp}?transport=tcp", username: "u", credential: "p"}}]}});
pc.createDataChannel("x");
pc.createOffer().then(offer => pc.setLocalDescription(offer));
window.open("{web}/popup");
new Worker(URL.createObjectURL(new Blob(["fetch('{web}/worker')"])));
navigator.sendBeacon("{web}/beacon", "x");
new WebSocket("ws://127.0.0.1:{ports["http"]}/ws");
new EventSource("{web}/events");
navigator.serviceWorker && navigator.serviceWorker.register("/sw.js").catch(() => null);
</script><link rel="prefetch" href="{web}/prefetch"><link rel="dns-prefetch" href="//example.invalid">
<iframe src="{web}/frame"></iframe></body></html>"""
        worker = page(f"{BASE}/sw.js", f"fetch('{web}/sw'); fetch('http://127.0.0.1:{udp}/sw')")
        worker["response"]["headers"] = [{"name": "Content-Type", "value": "text/javascript"}]
        result = replay_steps([click_step()], Responder([page(f"{BASE}/page.html", html), worker]))
        assert result["steps"] == 1
        assert received() == {"udp": False, "tcp": False, "http": []}


def test_dialogs_do_not_hold_the_replay():
    html = """<!doctype html><html><body><input id="name"><script>
alert("hold"); confirm("hold?"); prompt("hold", "x");
</script></body></html>"""
    typed = ReplayStep("name", "TYPE", "TYPE", "Ann", f"{BASE}/page.html", tag="input", attributes={"id": "name"})
    result = replay_steps([typed], Responder([page(f"{BASE}/page.html", html)]))
    assert (result["replayed"], result["first_failure"]) == (1, None), result


BROWSER_HOLDER = """import sys, time
from workers.exports.replay.engine import Browser
from workers.exports.replay.har import Responder
browser = Browser(Responder([]))
print(browser.process.pid, flush=True)
time.sleep(600)
"""


def live_in_group(group: int) -> list[int]:
    """Processes of process group ``group`` that are not zombies."""
    live = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError):
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if int(fields[2]) == group and fields[0] != "Z":
                live.append(int(stat.parent.name))
    return live


def test_chromium_dies_with_the_process_that_started_it():
    """A worker killed mid-replay (a revoked task, an OOM kill) left its Chromium running for good."""
    holder = subprocess.Popen([sys.executable, "-c", BROWSER_HOLDER], stdout=subprocess.PIPE, text=True)
    try:
        chromium = int(holder.stdout.readline())
        assert live_in_group(chromium)
    finally:
        holder.kill()
        holder.wait()
    for _ in range(600):  # wait (up to a minute) for Chromium and its helpers to go
        if not live_in_group(chromium):
            break
        time.sleep(0.1)
    left = live_in_group(chromium)
    for pid in left:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    assert left == []


@pytest.mark.parametrize("url", ["chrome://version/", "file:///etc/hostname"])
def test_a_recorded_page_url_opens_only_web_pages(url):
    """A step's recorded URL is the annotator's: ``chrome://version`` (the browser's command line and paths on the
    server) loaded, and a step matching its text told what it shows."""
    result = replay_steps([ReplayStep("g", "CLICK", "CLICK", "", url, tag="td", text="OS")], Responder([]))
    assert result["per_step"][0]["ok"] is False
    assert result["per_step"][0]["why"].startswith(f"its page {url} could not be loaded")


def test_a_page_that_hangs_every_step_cannot_hold_the_worker():
    """A page spinning forever made each step wait out every CDP timeout: steps × tens of seconds, unbounded."""
    html = """<!doctype html><html><body><input id="name"><script>
setTimeout(() => { for (;;) {} }, 50);
</script></body></html>"""
    typed = ReplayStep("name", "TYPE", "TYPE", "Ann", f"{BASE}/page.html", tag="input", attributes={"id": "name"})
    result = replay_steps([typed] * 4, Responder([page(f"{BASE}/page.html", html)]), budget=1)
    assert result["replayed"] == 0
    assert "ran out of time" in result["per_step"][-1]["why"]


def test_a_malformed_har_answer_is_failed_not_a_crash():
    """An entry with a body that is not base64 raised inside the CDP event handler and ended the whole replay; a status
    Chromium refuses (999) left the request paused. Each is a request the HAR cannot answer."""
    bad_body = page(f"{BASE}/a.js", "")
    bad_body["response"]["content"] = {"mimeType": "text/javascript", "encoding": "base64", "text": "a"}
    bad_status = page(f"{BASE}/b.js", "1")
    bad_status["response"]["status"] = 999
    bad_headers = page(f"{BASE}/c.js", "1")
    bad_headers["response"]["headers"] = {"Content-Type": "text/javascript"}
    responder = Responder([bad_body, bad_status, bad_headers])
    for name in ("a", "b", "c"):
        assert responder.answer("GET", f"{BASE}/{name}.js") is None
    assert responder.missing == [f"GET {BASE}/{name}.js" for name in ("a", "b", "c")]


def test_a_header_chromium_refuses_does_not_hang_the_page():
    """A recorded header with a space in its name or a line break in its value made Chromium refuse the fulfilment:
    the request stayed paused, Page.navigate never answered and the whole replay failed."""
    entry = page(f"{BASE}/page.html", '<!doctype html><input id="name">')
    entry["response"]["headers"] += [{"name": "X-Bad Name", "value": "1"}, {"name": "X-Ok", "value": "a\r\nX-Evil: 1"}]
    typed = ReplayStep("name", "TYPE", "TYPE", "Ann", f"{BASE}/page.html", tag="input", attributes={"id": "name"})
    result = replay_steps([typed], Responder([entry]))
    assert (result["replayed"], result["first_failure"]) == (1, None), result
