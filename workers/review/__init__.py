"""Preparing a recording for review on the worker: screenshot suggestions from the tab video and quality checks
(``realign``), thumbnails for the timeline (``thumbnails``)."""
