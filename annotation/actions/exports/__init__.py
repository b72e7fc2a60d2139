"""Exports, splits and evaluations: ``jobs`` (creating export and evaluation jobs, their life on the worker,
cancelling, reaping; agent runs are jobs too), ``splits`` (a project's split configuration and report),
``turkingbench`` (the filters of an export of form batches), ``releases`` and ``imports`` (importing a released
benchmark) and ``recuration`` (what review changed in an imported release: ``changes.json``, its page and API)."""
