"""Reports of benchmark runs: what people read. The self-contained HTML report, exports and the Markdown
summary, of one run directory or several compared.

Reads run directories (records, step traces, metrics) only: of ours it imports `harness.metrics` (with
the record columns) and the record schema `harness.records`, never the engines, the load generator or
the CLI. See docs/report.md.
"""

from __future__ import annotations

from reports.analysis import Analysis, analyse
from reports.exports import export_all, export_metrics, export_records, metrics_document
from reports.markdown import markdown_summary
from reports.report import build_report, write_report

__all__ = [
    "Analysis",
    "analyse",
    "build_report",
    "export_all",
    "export_metrics",
    "export_records",
    "markdown_summary",
    "metrics_document",
    "write_report",
]
