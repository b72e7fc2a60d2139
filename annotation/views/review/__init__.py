"""The review pages: the views that serve them and their small JSON endpoints (``pages``), and what they show
(``demo_page``)."""
