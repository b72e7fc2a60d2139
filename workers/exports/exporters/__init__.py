"""Export formats: one pure module per format, all with the interface of ``base.Exporter``."""

from ..archive import DeflatedFiles
from .base import BlobSource, ExportCounts, ExportDemo, Exporter, ExportTurn


def get_exporter(format_name: str, deflated: "DeflatedFiles | None" = None) -> "Exporter":
    """The exporter of a format name (``weblinx``, ``mind2web``). ``deflated``: where a format keeps its largest files
    deflated for a tar.gz instead of writing them into the folder (Mind2Web's split files)."""
    from .mind2web import Mind2WebExporter
    from .weblinx import WeblinxExporter

    exporters = {exporter.format: exporter for exporter in (WeblinxExporter(), Mind2WebExporter(deflated))}
    if format_name not in exporters:
        raise ValueError(f"unknown export format {format_name!r}; known: {', '.join(sorted(exporters))}")
    return exporters[format_name]


__all__ = ["BlobSource", "ExportCounts", "ExportDemo", "ExportTurn", "Exporter", "get_exporter"]
