"""The forms API: batches (upload, settings, results, statistics, tasks) and assignments."""
