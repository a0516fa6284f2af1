"""The console's line for a run where some requests failed and the rest were served: how many, of which type.

A replica that dies behind a router fails the requests it held (disconnect) and those routed to it later
(the router's 5xx, or a refused connection); the run goes on with the other replicas, and this line says so
rather than leaving it to the `failed` column alone.
"""

from __future__ import annotations

from typing import Any


def partial_failure_lines(metrics: dict[str, Any]) -> list[str]:
    lines = []
    for run in metrics["runs"]:
        requests = run["summary"]["requests"]
        failed, total = requests.get("failed") or 0, requests.get("total") or 0
        if not failed or failed == total:  # none failed, or all did (run_failure's line says that one)
            continue
        kinds = requests.get("failures_by_type") or {}
        by_type = ", ".join(f"{kind} {n}" for kind, n in sorted(kinds.items(), key=lambda kv: -kv[1]))
        first = run.get("first_error") or "-"
        lines.append(
            f"! {run['engine']} trial {run['trial']}: {failed} of {total} requests failed ({by_type}); "
            f"the other {total - failed} were served (first error: {first})"
        )
    return lines
