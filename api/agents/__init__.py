"""The agents API: agent runs on a project's form tasks (start one, follow it, cancel it, read its scores)."""
