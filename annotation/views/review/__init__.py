"""The review pages: the list (``listing``), one demo's page (``demo_page``, with its edit ``history``), and the
views that serve them and their small JSON endpoints (``pages``)."""
