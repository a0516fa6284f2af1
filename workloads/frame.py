"""The table form of a workload: every reader, generator and transform works on one DataFrame layout.

Columns: arrival_s (float), input_tokens and output_tokens (int64), tenant (str), priority (int64),
prompt_text (object: str or None), prefix_hash_ids (object: tuple of ints) and reasoning_tokens (int64: of
the output tokens, how many lead as reasoning; 0 for none) and slo_class (object: str or None). Object dtype
for the text and tuple columns keeps None and tuples intact, which pandas' string dtype would turn into NaN.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from workloads.model import WorkloadRequest

COLUMNS = (
    "arrival_s",
    "input_tokens",
    "output_tokens",
    "tenant",
    "priority",
    "prompt_text",
    "prefix_hash_ids",
    "reasoning_tokens",
    "slo_class",
)


def make_frame(
    arrival_s: np.ndarray | Sequence[float],
    input_tokens: np.ndarray | Sequence[int],
    output_tokens: np.ndarray | Sequence[int],
    tenant: Sequence[str] | str = "default",
    priority: np.ndarray | Sequence[int] | int = 0,
    prompt_text: Sequence[str | None] | None = None,
    prefix_hash_ids: Sequence[tuple[int, ...]] | None = None,
    reasoning_tokens: np.ndarray | Sequence[int] | int = 0,
    slo_class: Sequence[str | None] | None = None,
) -> pd.DataFrame:
    n = len(arrival_s)
    frame = pd.DataFrame(
        {
            "arrival_s": np.asarray(arrival_s, dtype=np.float64),
            "input_tokens": np.asarray(input_tokens, dtype=np.int64),
            "output_tokens": np.asarray(output_tokens, dtype=np.int64),
            "tenant": [tenant] * n if isinstance(tenant, str) else list(tenant),
            "priority": np.broadcast_to(np.asarray(priority, dtype=np.int64), (n,)).copy(),
        }
    )
    frame["reasoning_tokens"] = np.broadcast_to(np.asarray(reasoning_tokens, dtype=np.int64), (n,)).copy()
    frame["slo_class"] = pd.Series([None] * n if slo_class is None else list(slo_class), dtype=object)
    frame["prompt_text"] = pd.Series([None] * n if prompt_text is None else list(prompt_text), dtype=object)
    frame["prefix_hash_ids"] = pd.Series(
        [()] * n if prefix_hash_ids is None else [tuple(h) for h in prefix_hash_ids], dtype=object
    )
    return frame


def sort_by_arrival(frame: pd.DataFrame) -> pd.DataFrame:
    # Stable, so requests that share a timestamp keep their source order (conversation turns stay in order).
    return frame.sort_values("arrival_s", kind="stable").reset_index(drop=True)


def to_requests(frame: pd.DataFrame) -> list[WorkloadRequest]:
    """Requests in arrival order, with ids numbered in that order."""
    frame = sort_by_arrival(frame)
    if "reasoning_tokens" not in frame:  # a frame built without make_frame: no request reasons
        frame = frame.assign(reasoning_tokens=0)
    if "slo_class" not in frame:
        frame = frame.assign(slo_class=None)
    width = max(6, len(str(len(frame))))
    columns = [frame[c].tolist() for c in COLUMNS]
    return [
        WorkloadRequest(
            request_id=f"r{i:0{width}d}",
            arrival_s=float(arrival),
            input_tokens=int(n_in),
            output_tokens=int(n_out),
            tenant=str(tenant),
            priority=int(prio),
            prompt_text=text if isinstance(text, str) else None,
            prefix_hash_ids=hashes if isinstance(hashes, tuple) else tuple(hashes),
            reasoning_tokens=int(reasoning),
            slo_class=cls if isinstance(cls, str) else None,
        )
        for i, (arrival, n_in, n_out, tenant, prio, text, hashes, reasoning, cls) in enumerate(
            zip(*columns, strict=True)
        )
    ]


def from_requests(requests: Sequence[WorkloadRequest]) -> pd.DataFrame:
    return make_frame(
        [r.arrival_s for r in requests],
        [r.input_tokens for r in requests],
        [r.output_tokens for r in requests],
        tenant=[r.tenant for r in requests],
        priority=[r.priority for r in requests],
        prompt_text=[r.prompt_text for r in requests],
        prefix_hash_ids=[r.prefix_hash_ids for r in requests],
        reasoning_tokens=[r.reasoning_tokens for r in requests],
        slo_class=[r.slo_class for r in requests],
    )
