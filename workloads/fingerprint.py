"""The workload fingerprint: proof that two runs replayed the same requests from the same spec.

sha256 over a canonical JSON document (sorted keys, no whitespace, UTF-8) holding the spec without its labels
(`name`, `description`), the closed-loop settings and one row per request. Arrival times enter as integer
microseconds so that float formatting cannot change the hash; notes do not enter (they are derived).
"""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # `Workload` calls these functions: at run time the import goes one way only
    from workloads.model import Workload

LABEL_KEYS = ("name", "description")


def canonical_document(workload: Workload) -> dict[str, Any]:
    spec = {k: v for k, v in workload.spec.items() if k not in LABEL_KEYS}
    rows = [
        [
            r.request_id,
            round(r.arrival_s * 1_000_000),
            r.input_tokens,
            r.output_tokens,
            r.tenant,
            r.priority,
            r.prompt_text,
            list(r.prefix_hash_ids),
        ]
        for r in workload.requests
    ]
    reasoning = [r.reasoning_tokens for r in workload.requests]
    extra: dict[str, Any] = {"reasoning_tokens": reasoning} if any(reasoning) else {}  # absent: older ones stay valid
    classes = [r.slo_class for r in workload.requests]
    if any(c is not None for c in classes):
        extra["slo_class"] = classes
    if any(r.branch or r.tool_s for r in workload.requests):  # agentic sessions: the DAG and its pauses
        extra["dag"] = [
            [r.session, r.turn, r.branch, round(r.think_s * 1e6), round(r.tool_s * 1e6)] for r in workload.requests
        ]
    if any(r.fresh for r in workload.requests):  # turns whose context starts over; absent: older ones stay valid
        extra["fresh"] = [r.request_id for r in workload.requests if r.fresh]
    return {
        **extra,
        "version": 1,
        "spec": spec,
        "closed_loop_users": workload.closed_loop_users,
        "think_time_s": workload.think_time_s,
        "requests": rows,
    }


def canonical_json(document: Any) -> bytes:
    return json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode(
        "utf-8"
    )


def fingerprint(workload: Workload) -> str:
    return hashlib.sha256(canonical_json(canonical_document(workload))).hexdigest()
