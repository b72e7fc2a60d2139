"""The exports API: demonstrations with their split, export jobs (create, follow, cancel, download) and evaluations."""
