"""Agents on TurkingBench form tasks, importable without Django.

- ``turkle``: task directories (template + batch.csv) and Turkle-compatible preview pages.
- ``cells``: the spreadsheet-formula escaping of CSV cells the platform writes, and its inverse.
- ``actions``: the official action library (``modify_text`` ...) plus the paper's visual actions.
- ``scoring``: the official scorer and the paper metric (pure).
- ``harness`` / ``solvers``: run a solver per field in headless Chromium and score the page.
- ``offline``: validate and score offline predictions.
- ``browser`` / ``server``: the Chromium factory and a loopback server for task directories.

See ``docs/agents.md``.
"""
