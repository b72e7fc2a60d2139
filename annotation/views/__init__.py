"""The app's pages, one module (or package) per area; ``errors`` (the 403/404/500 pages) and ``page_errors`` (action
errors on pages, mapped in one place)."""
