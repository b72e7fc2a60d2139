"""Management pages: projects, members and roles, your API token (``pages``, with their forms); invitation links,
people and your account (``people``); sign-in and password reset (``signin``)."""
