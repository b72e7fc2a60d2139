"""Names of the export formats the domain accepts, and how a recorded demo's Mind2Web ids derive from its name
(pure: the worker's exporters and archive writer import them too)."""

import uuid

ARCHIVE_FORMATS = ("tar.gz", "zip")
ARCHIVE_MEDIA_TYPES = {"tar.gz": "application/gzip", "zip": "application/zip"}

MIND2WEB_NAMESPACE = uuid.UUID("4f6b1c2e-9d3a-5e7f-8b21-6c0d4a9e3f15")  # fixed forever: ids derive from it


def mind2web_task_id(demo_name: str) -> str:
    """The ``annotation_id`` a Mind2Web export gives a recorded demo (an imported one keeps its release's)."""
    return str(uuid.uuid5(MIND2WEB_NAMESPACE, demo_name))
