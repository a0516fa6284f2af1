"""Per-tenant breakdown: the headline metrics again, one row per tenant.

Point percentiles only (no bootstrap): tenants can be small, and the table is for spotting which
tenant suffered, not for confidence statements.
"""

from __future__ import annotations

import pandas as pd

from harness.metrics.fairness import INPUT_WEIGHT, OUTPUT_WEIGHT, tenant_service
from harness.metrics.latency import request_latencies
from harness.metrics.slo import DEFAULT_SLO, SLO, slo_table


def tenant_table(
    records: pd.DataFrame,
    slo: SLO = DEFAULT_SLO,
    *,
    input_weight: float = INPUT_WEIGHT,
    output_weight: float = OUTPUT_WEIGHT,
) -> pd.DataFrame:
    """Indexed by tenant: request counts, SLO attainment, latency percentiles, waits and service."""
    lat = request_latencies(records)
    lat["meets_slo"] = slo_table(lat, slo)["meets_slo"]
    lat["raw_queue_delay"] = records["t_admitted"] - records["t_scheduled"]
    g = lat.groupby("tenant", sort=True)
    table = pd.DataFrame(
        {
            "requests": g.size(),
            "succeeded": g["succeeded"].sum(),
            "failed": g["succeeded"].agg(lambda s: int((~s).sum())),
            "slo_met": g["meets_slo"].sum(),
            "output_tokens": g["output_tokens"].sum(),
            "ttft_p50": g["ttft"].quantile(0.5),
            "ttft_p99": g["ttft"].quantile(0.99),
            "tpot_p50": g["tpot"].quantile(0.5),
            "tpot_p99": g["tpot"].quantile(0.99),
            "e2e_p50": g["e2e"].quantile(0.5),
            "e2e_p99": g["e2e"].quantile(0.99),
            "slowdown_p99": g["slowdown"].quantile(0.99),
            "max_queue_delay": g["raw_queue_delay"].max(),
        }
    )
    table["attainment"] = table["slo_met"] / table["requests"]
    service = tenant_service(records, input_weight=input_weight, output_weight=output_weight)
    table = table.join(service, how="left")
    table.index.name = "tenant"
    return table
