"""Offline replay of a recorded Mind2Web task from its HAR in headless Chromium (docs/mind2web.md#replay):
``har`` answers the requests, ``engine`` drives Chromium over CDP and performs the steps, ``run`` builds them from a
demonstration and stores the result."""
