"""Solvers the agent-run tests start through the API (the worker loads them: ``AGENT_SOLVER_MODULES`` names this
module in the tests' worker environment)."""

import os
import time
from pathlib import Path

from agents.harness import Solver
from agents.solvers import Oracle


class RaisesOnRadio(Oracle):
    """The oracle, except that it breaks a radio group halfway (one click) and then raises."""

    name = "raises-on-radio"

    def solve(self, request):
        if request.type == "radio":
            request.actions.execute_js_command("document.getElementsByName(arguments[0])[0].click()", request.name)
            raise RuntimeError("model timed out")
        super().solve(request)


class Gate(Solver):
    """Does nothing, but on its first field writes ``$AGENT_TEST_GATE/entered`` and waits (a condition, at most
    60 s) for ``$AGENT_TEST_GATE/release``: the test cancels the run meanwhile."""

    name = "gate"

    def __init__(self):
        self.folder, self.waited = Path(os.environ["AGENT_TEST_GATE"]), False

    def solve(self, request):
        if self.waited:
            return
        self.waited = True
        (self.folder / "entered").write_text("1")
        deadline = time.monotonic() + 60
        while not (self.folder / "release").exists() and time.monotonic() < deadline:
            time.sleep(0.02)


class Hangs(Oracle):
    """The oracle, except that on instance 0 its first field runs a page script that never returns (with an hour's
    script timeout): a browser command stuck for good, as a page's endless loop makes it."""

    name = "hangs"

    def solve(self, request):
        if request.instance == 0:
            request.driver.set_script_timeout(3600)
            request.actions.execute_js_command("for (;;) {}")
        super().solve(request)
