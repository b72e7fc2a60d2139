"""Screenshots of the recorder's side panel in each state, kept by the test run for people to review.

Saved as ``$PANEL_SHOTS_DIR/<test name>/<NN>-<state>.png`` (default ``var/panel-shots/``, ignored by git; CI keeps
the directory with its log). They are evidence for review, not assertions: tests check the panel's text and
state through the DOM; the shot shows a person what that state looks like.
"""

import os
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def shots_dir() -> Path:
    return Path(os.environ.get("PANEL_SHOTS_DIR") or ROOT / "var" / "panel-shots")


def save_panel_shot(driver, test_name: str, state: str) -> Path:
    """The driver's current window (the side panel page) as a PNG named after the test and the state shown."""
    folder = shots_dir() / re.sub(r"[^A-Za-z0-9_.-]+", "-", test_name)
    folder.mkdir(parents=True, exist_ok=True)
    number = len(list(folder.glob("*.png"))) + 1
    path = folder / f"{number:02d}-{re.sub(r'[^A-Za-z0-9_.-]+', '-', state)}.png"
    driver.save_screenshot(str(path))
    return path
