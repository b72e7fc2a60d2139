"""Exports, splits and evaluations: ``jobs`` (creating export and evaluation jobs, their life on the worker,
cancelling, reaping; agent runs are jobs too), ``splits`` (a project's split configuration and report) and
``turkingbench`` (the filters of an export of form batches)."""
