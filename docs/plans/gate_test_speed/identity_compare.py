"""Compare two identity_runs.sh outputs A and B: the simulated run's records and metrics.json whole, the torch
runs' records per request (engine, id, token counts, finish reason, error)."""

from __future__ import annotations

import json
import pathlib
import sys

a, b = map(pathlib.Path, sys.argv[1:3])


def records(run: pathlib.Path) -> list[dict]:
    return [json.loads(line) for line in (run / "records.jsonl").read_text().splitlines()]


def key(r: dict) -> tuple:
    fields = ("engine", "request_id", "output_tokens", "prompt_tokens", "engine_output_tokens", "finish_reason")
    return (*(r.get(f) for f in fields), r.get("error_type"))


ra, rb = records(a / "sim"), records(b / "sim")
print("sim records identical:", ra == rb, len(ra))
ma, mb = (json.loads((x / "sim" / "metrics.json").read_text()) for x in (a, b))
print("sim metrics keys differing:", [k for k in ma if ma[k] != mb.get(k)])
ta, tb = records(a / "torch"), records(b / "torch")
print("torch per-request fields identical:", sorted(map(key, ta)) == sorted(map(key, tb)), len(ta))
