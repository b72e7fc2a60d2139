"""The app's pages, one module (or package) per area: ``home``, ``live`` (and ``live_socket``, the session's
WebSocket), ``review/``, ``mind2web``, ``forms/``, ``exports/``, ``agents``, ``stats``, ``manage/``. Thin: each view
checks and calls ``annotation.actions`` and renders a template of the same area word. ``errors``: the 403/404/500
pages; ``page_errors``: action errors on pages, mapped in one place."""
