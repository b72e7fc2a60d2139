"""Agent runs on the worker (``runs``): a solver on a split's form tasks in this worker's own headless Chromium."""
