"""Form batches on the worker: their rows as TurkingBench export values (``dataset``)."""
