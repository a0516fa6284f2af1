"""Metrics of a benchmark run: pure functions from record (and step-trace) tables to tables and dicts.

`frame.py` reads records and step traces into typed tables whose columns derive from the two record
schemas (`columns.py`); everything else is records in, numbers out, no hidden state. Definitions, with
the variants other tools use, are in docs/metrics.md. Imports: `harness.records`, `engines.step_record`
and numpy, pandas, scipy; never the load generator, the gate or the CLI (`reports` reads it).
"""

from __future__ import annotations

from harness.metrics.compare import paired_deltas, paired_summary
from harness.metrics.cost import DEFAULT_PRICE_PER_HOUR, cost
from harness.metrics.fairness import (
    backlog_intervals,
    fairness,
    jain_index,
    service_events,
    starvation,
    tenant_service,
    vtc_gap,
)
from harness.metrics.frame import load_records, load_steps, records_frame, steps_frame
from harness.metrics.latency import inter_token_latencies, request_latencies, succeeded
from harness.metrics.slo import DEFAULT_SLO, SLO, goodput, slo_table
from harness.metrics.stats import DEFAULT_PERCENTILES, bootstrap_ci, describe, percentiles
from harness.metrics.summary import (
    SUMMARY_SCHEMA_VERSION,
    jsonable,
    summarize,
    summarize_by_engine,
    summary_table,
)
from harness.metrics.tenants import tenant_table
from harness.metrics.throughput import (
    Window,
    run_window,
    run_windows,
    send_rates,
    steady_window,
    throughput,
    throughput_table,
)
from harness.metrics.utilisation import phase_table, utilisation
from harness.metrics.validity import ValidityFlag, validity, validity_flags

__all__ = [
    "DEFAULT_PERCENTILES",
    "DEFAULT_PRICE_PER_HOUR",
    "DEFAULT_SLO",
    "SLO",
    "SUMMARY_SCHEMA_VERSION",
    "ValidityFlag",
    "Window",
    "backlog_intervals",
    "bootstrap_ci",
    "cost",
    "describe",
    "fairness",
    "goodput",
    "inter_token_latencies",
    "jain_index",
    "jsonable",
    "load_records",
    "load_steps",
    "paired_deltas",
    "paired_summary",
    "percentiles",
    "phase_table",
    "records_frame",
    "request_latencies",
    "run_window",
    "run_windows",
    "send_rates",
    "service_events",
    "slo_table",
    "starvation",
    "steady_window",
    "steps_frame",
    "succeeded",
    "summarize",
    "summarize_by_engine",
    "summary_table",
    "tenant_service",
    "tenant_table",
    "throughput",
    "throughput_table",
    "utilisation",
    "validity",
    "validity_flags",
    "vtc_gap",
]
