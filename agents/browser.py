"""Headless Chromium for agents: the distribution's Chromium and ChromeDriver, a fresh profile, no downloads.

``make_driver()`` starts the browser the harness and the offline evaluation use (``CHROME_FLAGS``, as BROWSER-NOTES
asks; the tests' browsers are started with the same ``chrome_options`` and ``start_chrome``). Every request of the
browser goes through its own ``agents.originguard.OriginGuard`` (``driver.origin_guard``, stopped on ``quit()``):
only the origin the harness allows (the task server's) is loaded, everything else gets the guard's 403, loopback
included. By default that is all: task pages load their CDN scripts and styles from the Internet, which benchmark
runs must not depend on (and tests may not use), so those requests fail at once and identically every time (the
browser also resolves only loopback host names). ``allow_network=True`` lets public hosts through as well.
``WebDriverClock`` measures the time spent inside WebDriver commands (the benchmark's ``harness_share``).

A browser stuck in a command (a page script that never returns, a command that never ends) is ended from another
thread with ``end_browser``: ChromeDriver and every process under it (Chromium's) are killed at once, so the
command waiting on them fails at once. ``Deadline`` does that when a block runs past its time.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import tempfile
import threading
import time
from pathlib import Path

from selenium import webdriver
from selenium.webdriver.chrome.service import Service

from .originguard import OriginGuard

LOOPBACK_ONLY = "MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE 127.0.0.1"


def chrome_binary() -> str:
    for candidate in (
        os.environ.get("CHROME_BINARY"),
        "/usr/lib/chromium/chromium",
        shutil.which("chromium"),
        shutil.which("google-chrome"),
    ):
        if candidate and Path(candidate).exists():
            return candidate
    raise RuntimeError("no Chromium found: install the 'chromium' package or set CHROME_BINARY")


def chromedriver() -> str:
    path = os.environ.get("CHROMEDRIVER") or shutil.which("chromedriver")
    if not path:
        raise RuntimeError("no ChromeDriver found: install the 'chromium-driver' package or set CHROMEDRIVER")
    return path


# The flags BROWSER-NOTES asks for: headless, no sandbox (root in a container), no GPU, nothing fetched in the
# background, a device scale of 1 (screenshots in CSS pixels).
CHROME_FLAGS = (
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--force-device-scale-factor=1",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)


def chrome_options(profile: str, width: int, height: int) -> webdriver.ChromeOptions:
    """Options for the distribution's headless Chromium on the ``--user-data-dir`` ``profile``, its window
    ``width``×``height`` (1280×943 gives a 1280×800 viewport)."""
    options = webdriver.ChromeOptions()
    options.binary_location = chrome_binary()
    for flag in (*CHROME_FLAGS, f"--user-data-dir={profile}", f"--window-size={width},{height}"):
        options.add_argument(flag)
    return options


def start_chrome(options: webdriver.ChromeOptions, delete_profile: str | None) -> webdriver.Chrome:
    """Start Chromium with the distribution's ChromeDriver. ``delete_profile``: a folder removed on ``quit()`` (and
    at once if the browser does not start)."""
    try:
        driver = webdriver.Chrome(options=options, service=Service(chromedriver()))
    except Exception:
        if delete_profile:
            shutil.rmtree(delete_profile, ignore_errors=True)
        raise
    driver.set_page_load_timeout(60)
    if not delete_profile:
        return driver
    original_quit = driver.quit

    def quit_and_clean():
        try:
            original_quit()
        finally:
            shutil.rmtree(delete_profile, ignore_errors=True)

    driver.quit = quit_and_clean
    return driver


def make_driver(width: int = 1280, height: int = 943, allow_network: bool = False) -> webdriver.Chrome:
    """A headless Chromium with a fresh ``--user-data-dir`` (deleted on ``quit()``); 1280×800 viewport; behind its
    own origin guard (``driver.origin_guard``: it refuses everything until ``allow_only(task_url)``)."""
    guard = OriginGuard(public=allow_network).start()
    profile = tempfile.mkdtemp(prefix="agents-chromium-")
    options = chrome_options(profile, width, height)
    for flag in guard.chrome_flags():
        options.add_argument(flag)
    if not allow_network:
        options.add_argument(f"--host-resolver-rules={LOOPBACK_ONLY}")
    try:
        driver = start_chrome(options, delete_profile=profile)
    except Exception:
        guard.stop()
        raise
    quit_browser = driver.quit

    def quit_and_stop_guard():
        try:
            quit_browser()
        finally:
            guard.stop()

    driver.quit = quit_and_stop_guard
    driver.origin_guard = guard
    return driver


class WebDriverClock:
    """Adds up the wall time spent in the driver's WebDriver commands (every command goes through ``execute``)."""

    def __init__(self, driver):
        self.seconds = 0.0
        self.commands = 0
        original = driver.execute

        def timed_execute(command, params=None):
            started = time.perf_counter()
            try:
                return original(command, params)
            finally:
                self.seconds += time.perf_counter() - started
                self.commands += 1

        driver.execute = timed_execute


def process_tree(pid: int) -> list[int]:
    """``pid`` and every process under it (children, their children ...), read from ``/proc`` (Linux)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdecimal():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:  # ended meanwhile
            continue
        parent = int(stat.rpartition(")")[2].split()[1])
        children.setdefault(parent, []).append(int(entry.name))
    tree, todo = [], [pid]
    while todo:
        current = todo.pop()
        tree.append(current)
        todo.extend(children.get(current, []))
    return tree


def end_browser(driver) -> bool:
    """Kill the driver's ChromeDriver and every process under it (Chromium's), all listed before any is killed so
    none escapes to init. A WebDriver command waiting on them fails at once; ``quit()`` still cleans up. True when
    there was something to kill."""
    process = getattr(getattr(driver, "service", None), "process", None)
    if process is None or process.poll() is not None:
        return False
    for pid in process_tree(process.pid):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
    with contextlib.suppress(Exception):
        process.wait(timeout=10)
    return True


class Deadline:
    """``with Deadline(driver, seconds):`` ends the browser (``end_browser``) if the block is still running after
    ``seconds`` (None: never), so a command stuck in it fails; ``expired`` then says so. A block that ends in time
    cancels it (the lock makes "ended in time" and "expired" exclusive)."""

    def __init__(self, driver, seconds: float | None):
        self.driver, self.seconds = driver, seconds
        self.expired = False
        self._done = False
        self._lock = threading.Lock()
        self._timer: threading.Timer | None = None

    def __enter__(self):
        if self.seconds is not None:
            self._timer = threading.Timer(self.seconds, self._expire)
            self._timer.daemon = True
            self._timer.start()
        return self

    def _expire(self) -> None:
        with self._lock:
            if self._done:
                return
            self.expired = True
        end_browser(self.driver)

    def __exit__(self, *exc) -> bool:
        with self._lock:
            self._done = True
        if self._timer is not None:
            self._timer.cancel()
        return False
