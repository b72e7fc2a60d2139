"""Exports, splits and evaluations of a project: the pages (``pages``) and their forms (``forms``)."""
