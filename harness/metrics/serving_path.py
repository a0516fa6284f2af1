"""Each request's TTFT split into the server's part and the path's, where the server timed its own part
(`server_ttft_s` in the records: `batchmark serve`'s per-request timing, docs/run-directory.md).

path = client TTFT (first token at the client - scheduled arrival, `latency.ttft`) - server TTFT (the request
reaching the server -> its first token): the load generator's lateness, the HTTP client, the router hop, the
server's frontend before its handler, and the first token's way back. Per request, so p50 and p99 hold against a
request the machine stalled, where a difference of means (the /metrics histograms' sums) does not. None when no
record carries a server TTFT: a figure the run cannot know is absent, never 0.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd


def path_seconds(records: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(client TTFT, server TTFT, path) of the requests that have both TTFTs, seconds."""
    if "server_ttft_s" not in records or records.empty:
        empty = np.empty(0)
        return empty, empty, empty
    server = pd.to_numeric(records["server_ttft_s"], errors="coerce").to_numpy(dtype=np.float64)
    first = pd.to_numeric(records["t_first_token"], errors="coerce").to_numpy(dtype=np.float64)
    client = first - records["t_scheduled"].to_numpy(dtype=np.float64)
    both = np.isfinite(server) & np.isfinite(client)
    return client[both], server[both], client[both] - server[both]


def serving_path_summary(records: pd.DataFrame) -> dict[str, Any] | None:
    """`summary.serving_path`: `requests` with both TTFTs, `path_p50_s` / `path_p99_s` (linear quantiles over
    those requests), and the `client_ttft_p50_s` / `server_ttft_p50_s` they came from. None without a server
    TTFT in any record."""
    client, server, path = path_seconds(records)
    if not path.size:
        return None
    p50, p99 = np.quantile(path, [0.5, 0.99])
    return {
        "requests": int(path.size),
        "path_p50_s": float(p50),
        "path_p99_s": float(p99),
        "client_ttft_p50_s": float(np.median(client)),
        "server_ttft_p50_s": float(np.median(server)),
    }


def describe_serving_path(engine: str, summary: dict[str, Any]) -> str | None:
    """The console's line for one engine's path; None when its records had no server TTFT."""
    path = summary.get("serving_path")
    if not path:
        return None
    return (f"{engine}: serving path (client TTFT - server's own TTFT, {path['requests']} requests): "
            f"p50 {path['path_p50_s'] * 1e3:.2f} ms, p99 {path['path_p99_s'] * 1e3:.2f} ms "
            f"(TTFT p50 client {path['client_ttft_p50_s'] * 1e3:.2f} ms, server "
            f"{path['server_ttft_p50_s'] * 1e3:.2f} ms)")  # fmt: skip
