"""Exports, splits and evaluations of a project: the pages and their forms (``pages``)."""
