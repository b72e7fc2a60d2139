"""Pure helpers: importable without the database or a request (no models, no ORM), so the recorder's checks, the
worker's pipelines and the tests use them as they are. ``schema`` and ``shapes`` (WebLINX turns written and read),
``jsonsafe`` and ``pngcheck`` (client JSON and PNG screenshots checked whole), ``splits`` (split rules), ``formats``
(export and archive format names), ``charts`` (SVG geometry), ``quality`` (automatic checks of a recording)."""
