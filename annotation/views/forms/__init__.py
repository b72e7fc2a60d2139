"""Form-task pages: the worker's and the batch manager's (``pages``), the batch upload form (``upload``), and the
sandboxed task frames (``frames``)."""
