"""Management pages: projects, members and roles, your API token (``pages``, ``forms``); sign-in and password reset
(``signin``)."""
