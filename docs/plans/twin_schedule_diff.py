"""Issue 30's twin-schedule diagnosis (docs/measurements/2026-12-06-twin-schedule-diagnosis.md): a real run's
step traces and records beside its twins' (`batchmark sim fidelity RUN --profile P --twin-dir TWIN_DIR`), step by
step and request by request. Per
trial and for the twin: steps, busy time, time between steps, what the steps did (rows, chunks, keys), batch size,
queue length, prefix hits, admission order; and the real steps priced by the profile (same steps, the profile's
mean model, no noise), which separates "priced wrong" from "scheduled differently". Reads files only.

    .venv/bin/python docs/plans/twin_schedule_diff.py REAL_RUN PROFILE TWIN_DIR
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path
from typing import Any

import numpy as np

from engines.sim.fitted import load_profile, regressors
from harness.simulation import trace_steps


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def trace_summary(path: Path, profile: Any) -> dict[str, float]:
    rows = read_jsonl(path)
    trace = trace_steps([path])
    coef = np.array([profile.coefficients.get(n, 0.0) for n in profile.regressors])
    priced = profile.intercept_s + regressors(trace.features, profile.version) @ coef
    f = {
        k: np.array([r[k] for r in rows], dtype=float)
        for k in (
            "num_running",
            "waiting",
            "prefill_tokens",
            "prefill_chunks",
            "decode_seqs",
            "decode_context",
            "idle_slots",
            "padded_tokens",
            "prefix_cached_tokens",
        )
    }
    dur = trace.duration_s
    decode_only = f["prefill_tokens"] == 0
    return {
        "steps": len(rows),
        "span_s": rows[-1]["t_end"] - rows[0]["t_start"],
        "busy_s": float(dur.sum()),
        "gaps_s": float(trace.gaps_s.sum()),
        "mean_gap_ms": 1e3 * float(trace.gaps_s.mean()) if len(trace.gaps_s) else 0.0,
        "priced_busy_s": float(priced.sum()),
        "priced_gaps_s": profile.step_gap_s * len(trace.gaps_s),
        "decode_step_ms": 1e3 * float(np.median(dur[decode_only])) if decode_only.any() else 0.0,
        "decode_priced_ms": 1e3 * float(np.median(priced[decode_only])) if decode_only.any() else 0.0,
        "prefill_steps": int((f["prefill_tokens"] > 0).sum()),
        "prefill_tokens": float(f["prefill_tokens"].sum()),
        "prefill_chunks": float(f["prefill_chunks"].sum()),
        "decode_rows": float(f["decode_seqs"].sum()),
        "decode_keys_M": float(f["decode_context"].sum()) / 1e6,
        "held_rows": float(f["idle_slots"].sum()),
        "pad_tokens": float(f["padded_tokens"].sum()),
        "mean_batch": float(np.average(f["num_running"], weights=dur)),
        "mean_waiting": float(np.average(f["waiting"], weights=dur)),
        "max_waiting": float(f["waiting"].max()),
        "prefix_cached": float(f["prefix_cached_tokens"].sum()),
        "preempted": float(sum(len(r["preempted"]) for r in rows)),
    }


def admission_order(path: Path) -> list[str]:
    return [rid for r in read_jsonl(path) for rid in r["admitted"]]


def main(real: Path, profile_path: Path, twin_dir: Path) -> None:
    profile = load_profile(profile_path)
    traces = sorted((real / "steps").glob("*.jsonl"))
    twins = sorted((twin_dir / "steps").glob("*.jsonl"))
    columns = {p.stem: trace_summary(p, profile) for p in [*traces, *twins]}
    print(f"{'':18s}" + "".join(f"{n[-16:]:>17s}" for n in columns))
    for key in next(iter(columns.values())):
        print(f"{key:18s}" + "".join(f"{c[key]:17.4g}" for c in columns.values()))
    real_orders = [admission_order(p) for p in traces]
    for t in twins:
        order = admission_order(t)
        same = [sum(a == b for a, b in zip(order, o, strict=False)) for o in real_orders]
        print(f"admission order, {t.stem} vs each trial: {same} of {len(order)} positions agree")
    for i, o in enumerate(real_orders[1:], 1):
        print(f"admission order, trial 0 vs {i}: {sum(a == b for a, b in zip(real_orders[0], o, strict=False))}")
    by_id: dict[str, list[dict[str, Any]]] = {}
    for r in read_jsonl(real / "records.jsonl"):
        by_id.setdefault(r["request_id"], []).append(r)
    twin_records = read_jsonl(twin_dir / "records.jsonl")
    for name, records in (("real", [r for rs in by_id.values() for r in rs]), ("twin", twin_records)):
        for trial in sorted({r["trial"] for r in records}):
            ttft = sorted(r["t_first_token"] - r["t_scheduled"] for r in records if r["trial"] == trial)
            print(f"{name} trial {trial}: five worst TTFT ms " + " ".join(f"{1e3 * t:.1f}" for t in ttft[-5:]))
    twin = {r["request_id"]: r for r in twin_records if r["trial"] == 0}
    print("per request, seconds from scheduled: the real trials' median / the seed-0 twin")
    print("id        prompt  out  admit_real admit_twin  ttft_real ttft_twin   e2e_real  e2e_twin  tpot_r ms tpot_t ms")
    for rid, rs in sorted(by_id.items()):
        tw = twin[rid]

        def med(key: str, rs: list[dict[str, Any]] = rs) -> float:
            return statistics.median(r[key] - r["t_scheduled"] for r in rs)

        def tpot(r: dict[str, Any]) -> float:
            return 1e3 * (r["t_finish"] - r["t_first_token"]) / max(1, r["output_tokens"] - 1)

        print(
            f"{rid} {rs[0]['prompt_tokens']:6d} {rs[0]['output_tokens']:4d} {med('t_admitted'):10.3f} "
            f"{tw['t_admitted'] - tw['t_scheduled']:10.3f} {med('t_first_token'):10.3f} "
            f"{tw['t_first_token'] - tw['t_scheduled']:9.3f} {med('t_finish'):10.3f} "
            f"{tw['t_finish'] - tw['t_scheduled']:9.3f} {statistics.median(map(tpot, rs)):9.2f} "
            f"{tpot(tw):9.2f}"
        )


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]))
