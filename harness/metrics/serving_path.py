"""Each request's TTFT split into the server's part and the path's, where the server timed its own part
(`server_ttft_s` in the records: `batchmark serve`'s per-request timing, docs/run-directory.md).

path = client TTFT (first token at the client - scheduled arrival, `latency.ttft`) - server TTFT (the request
reaching the server -> its first token): the load generator's lateness, the HTTP client, the router hop, the
server's frontend before its handler, and the first token's way back. Per request, so p50 and p99 hold against a
request the machine stalled, where a difference of means (the /metrics histograms' sums) does not. None when no
record carries a server TTFT: a figure the run cannot know is absent, never 0.

Where the server also timed its queue (`server_queue_s`: the request reaching it -> the engine's first compute for
it), the server's part splits further: queue wait, then the rest of its TTFT (prefill, and the first token's
scheduling). A queue that grows with load is the server's, not the path's nor the prefill's.
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


def queue_seconds(records: pd.DataFrame) -> np.ndarray:
    """The server's own queue wait (`server_queue_s`) of the requests that have it and both TTFTs, seconds."""
    if "server_queue_s" not in records or "server_ttft_s" not in records or records.empty:
        return np.empty(0)
    queue = pd.to_numeric(records["server_queue_s"], errors="coerce").to_numpy(dtype=np.float64)
    server = pd.to_numeric(records["server_ttft_s"], errors="coerce").to_numpy(dtype=np.float64)
    first = pd.to_numeric(records["t_first_token"], errors="coerce").to_numpy(dtype=np.float64)
    return queue[np.isfinite(queue) & np.isfinite(server) & np.isfinite(first)]


def serving_path_summary(records: pd.DataFrame) -> dict[str, Any] | None:
    """`summary.serving_path`: `requests` with both TTFTs, `path_p50_s` / `path_p99_s` (linear quantiles over
    those requests), and the `client_ttft_p50_s` / `server_ttft_p50_s` they came from; `queue_requests` of them
    whose server also timed its queue, and `server_queue_p50_s` / `server_queue_p99_s` over those (None when
    none did: the server does not see its admissions). None without a server TTFT in any record."""
    client, server, path = path_seconds(records)
    if not path.size:
        return None
    p50, p99 = np.quantile(path, [0.5, 0.99])
    queue = queue_seconds(records)
    q50, q99 = np.quantile(queue, [0.5, 0.99]) if queue.size else (None, None)
    return {
        "requests": int(path.size),
        "path_p50_s": float(p50),
        "path_p99_s": float(p99),
        "client_ttft_p50_s": float(np.median(client)),
        "server_ttft_p50_s": float(np.median(server)),
        "queue_requests": int(queue.size),
        "server_queue_p50_s": None if q50 is None else float(q50),
        "server_queue_p99_s": None if q99 is None else float(q99),
    }


def describe_serving_path(engine: str, summary: dict[str, Any]) -> str | None:
    """The console's line for one engine's path; None when its records had no server TTFT."""
    path = summary.get("serving_path")
    if not path:
        return None
    q50 = path.get("server_queue_p50_s")  # a run from before the field has no key
    q99 = path.get("server_queue_p99_s")
    queue = "" if q50 is None else f"; server queue p50 {q50 * 1e3:.2f} ms, p99 {q99 * 1e3:.2f} ms"
    return (
        f"{engine}: serving path (client TTFT - server's own TTFT, {path['requests']} requests): "
        f"p50 {path['path_p50_s'] * 1e3:.2f} ms, p99 {path['path_p99_s'] * 1e3:.2f} ms "
        f"(TTFT p50 client {path['client_ttft_p50_s'] * 1e3:.2f} ms, server "
        f"{path['server_ttft_p50_s'] * 1e3:.2f} ms{queue})"
    )
