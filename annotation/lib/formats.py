"""Names of the export formats the domain accepts (pure: the worker's archive writer imports them too)."""

ARCHIVE_FORMATS = ("tar.gz", "zip")
ARCHIVE_MEDIA_TYPES = {"tar.gz": "application/gzip", "zip": "application/zip"}
