"""Exports and evaluations on the worker: the database as export values (``dataset``), one module per format
(``exporters``), archives (``archive``, ``s3upload``), the scorers (``metrics``) and what a job does (``jobs``)."""
