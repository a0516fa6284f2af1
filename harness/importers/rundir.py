"""An imported result as a batchmark run directory (docs/run-directory.md), which `batchmark report`,
`batchmark compare` and `batchmark gate` read like any other.

- `records.jsonl`: the rebuilt request records, when the tool's file had per-request data;
- `requests.jsonl`: the schedule those records imply (arrival, prompt and output length);
- `manifest.json`: `imported` says which tool, which schema, which file (with its sha256), and every
  note about what had to be assumed;
- `metrics.json`: per imported benchmark, batchmark's summary computed from the records (the same
  `summarize` as for its own runs), or, for aggregates only, a summary holding the tool's numbers
  with no intervals; beside it, under `imported`, the tool's own aggregates under batchmark's names,
  each with the tool's name and where its definition differs, and for records the check of those
  aggregates against the recomputed ones.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from pathlib import Path
from typing import Any

from harness.importers.common import Imported, ImportedRun, Reported
from harness.jsonl import JsonlWriter
from harness.metrics import SLO, describe, jsonable, records_frame, summarize, throughput
from harness.metrics.summary import SUMMARY_SCHEMA_VERSION

LATENCIES = ("ttft", "ttft_sent", "tpot", "itl", "e2e", "e2e_sent")
AGREE = 0.02  # a recomputed mean within 2% of the tool's own: the mapping reproduces the tool
# What batchmark measures that no other tool's result file carries: n/a in an imported summary, with why.
LACKS = {
    "preemptions": "the tool's file holds no engine events, so preemptions are unknown (not 0)",
    "t_admitted": "the tool's file holds no engine events, so queueing inside the engine is unknown",
    "cached_tokens": "the tool's file holds no engine counts, so prefix-cache hits are unknown",
    "server": "the tool's file holds no scraped server series",
    "utilisation": "the tool's file holds no engine step trace",
}


def write_run_dir(imported: Imported, out: Path, *, slo: SLO, argv: list[str]) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    runs = []
    with JsonlWriter(out / "records.jsonl") as records:
        for run in imported.runs:
            for r in run.records or []:
                records.write(r.to_json())
    if len(imported.runs) == 1 and imported.runs[0].records:  # several benchmarks have several schedules: none
        with JsonlWriter(out / "requests.jsonl") as schedule:
            for r in imported.runs[0].records:
                schedule.write(
                    {
                        "request_id": r.request_id,
                        "arrival_s": r.t_scheduled,
                        "input_tokens": r.prompt_tokens,
                        "output_tokens": r.output_tokens,
                        "tenant": r.tenant,
                        "priority": r.priority,
                    }
                )
    imported_block: dict[str, Any] = {}
    for run in imported.runs:
        summary = _summary(run, slo)
        summary["requests"]["preemptions"] = None  # LACKS says why
        checks = _checks(run, summary) if run.records else []
        run.notes += [c["message"] for c in checks if not c["agrees"]]
        runs.append(
            {
                "engine": run.label,
                "trial": 0,
                "wall_time_s": None,
                "stopped_early": None,
                "not_sent": 0,
                "summary": summary,
                "imported": True,
            }
        )
        imported_block[run.label] = {
            "reported": {k: v.to_json() for k, v in run.reported.items()},
            "checks": checks,
            "settings": run.settings,
            "notes": run.notes,
            "per_request": run.records is not None,
            "scenario": vars(run.scenario),
            "lacks": LACKS,
        }
    metrics = {
        "schema_version": 1,
        "runs": runs,
        "engines": {r["engine"]: r["summary"] for r in runs},
        "repeat": {},
        "comparison": {},
        "imported": imported_block,
    }
    _write_json(out / "metrics.json", metrics)
    _write_json(out / "manifest.json", _manifest(imported, slo, argv))
    return out


def _manifest(imported: Imported, slo: SLO, argv: list[str]) -> dict[str, Any]:
    digest = hashlib.sha256(imported.source.read_bytes()).hexdigest()
    name = f"{imported.tool}: {imported.source.name}"
    scenarios = {r.scenario for r in imported.runs}
    scenario = next(iter(scenarios)) if len(scenarios) == 1 else None
    return {
        "manifest_version": 1,
        "started_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "command": argv,
        "imported": {
            "tool": imported.tool,
            "schema": imported.schema,
            "source": str(imported.source.resolve()),
            "sha256": digest,
            "notes": imported.notes,
            "runs": {
                r.label: {"notes": r.notes, "settings": r.settings, "scenario": vars(r.scenario)} for r in imported.runs
            },
        },
        "workload": {
            "name": name,
            "fingerprint": None,
            "requests": sum(len(r.records or []) for r in imported.runs),
            "closed_loop_users": scenario.users if scenario and scenario.kind == "closed" else None,
        },
        "engines": [
            {"label": r.label, "kind": imported.tool, "settings": r.settings, "scenario": vars(r.scenario)}
            for r in imported.runs
        ],
        # as batchmark's own runs write them; several benchmarks offered differently have no one scenario
        "settings": {
            "slo": slo.to_json(),
            "open_loop": all(r.scenario.kind != "closed" for r in imported.runs),
            "scenario": vars(scenario) if scenario else None,
        },
        "outcomes": [{"engine": r.label, "trial": 0} for r in imported.runs],
    }


def _summary(run: ImportedRun, slo: SLO) -> dict[str, Any]:
    if run.records:
        return summarize(records_frame([r.to_json() for r in run.records]), slo=slo)
    return summary_from_reported(run)


def summary_from_reported(run: ImportedRun) -> dict[str, Any]:
    """A summary in batchmark's shape holding only what the tool reported: point values, no intervals
    (the tool gave none), and every rate batchmark would compute over its steady window n/a with why."""
    reason = "imported aggregates: the tool's file holds no per-request times, so no steady window"
    # The tools time from the send; with no per-request data the arrival is taken to be the send, as for
    # per-request imports without a scheduled time (the flag below says so).
    arrival_is_send = {"ttft": "ttft_sent", "e2e": "e2e_sent"}

    def dist(name: str) -> dict[str, Any]:
        """batchmark's distribution shape (an empty `describe`), holding the tool's mean and percentiles."""
        out = describe([], n_boot=0)
        r = run.reported.get(name) or run.reported.get(arrival_is_send.get(name, ""))
        if r is not None:
            out.update(count=r.count or 0, mean=r.mean)
            for label, row in out["percentiles"].items():  # type: ignore[union-attr]
                row["value"] = r.percentiles.get(label)
        return out

    def rate(name: str) -> float | None:
        r = run.reported.get(name)
        return r.mean if r else None

    # batchmark's throughput shape, from an empty table (every rate None with its reason), then the tool's rates
    empty = {**throughput(records_frame([]), None), "reason": reason}
    empty["reasons"] = dict.fromkeys(empty["reasons"], reason)
    whole = {**empty, "kind": "whole_run", "reason": None, "reasons": {}}
    whole.update({name: rate(name) for name in ("request_rate", "output_token_rate", "total_token_rate")})
    count = next((r.count for r in run.reported.values() if r.count), 0) or 0
    return jsonable(
        {
            "schema_version": SUMMARY_SCHEMA_VERSION,
            "engine": run.label,
            "trial": 0,
            "aggregates_only": True,
            "requests": {
                "total": count,
                "succeeded": count,
                "failed": 0,
                "failures_by_type": {},
                "finish_reasons": {},
                "output_tokens": None,  # aggregates: no per-request counts (the reason above)
                "prompt_tokens": None,
                "preemptions": None,
            },
            "latency": {m: dist(m) for m in LATENCIES},
            "schedule_lag": dist("schedule_lag"),
            "throughput": {"warmup": empty, "steady": empty, "drain": empty, "whole_run": whole},
            "slo": {
                "slo": None,
                "requests": None,
                "met": None,
                "attainment": None,
                "violations": {},
                "goodput_rps_steady": None,
                "goodput_rps_steady_reason": reason,
                "goodput_rps_whole_run": rate("goodput"),
                "goodput_rps_whole_run_reason": None,
            },
            "tenants": {},
            "fairness": {"jain_index": None, "vtc_gap": {"gap": None}},
            "utilisation": None,
            "cost": {"usd_per_1m_output_tokens": None, "usd_per_1k_good_requests": None},
            "validity": {
                "valid": False,
                "checks": [],
                "flags": [
                    {
                        "name": "aggregates_only",
                        "count": 0,
                        "example_ids": [],
                        "message": f"{reason}; TTFT and E2E are the tool's, from the send (taken as the arrival)",
                    }
                ],
            },
            "parameters": {},
        }
    )


def _checks(run: ImportedRun, summary: dict[str, Any]) -> list[dict[str, Any]]:
    """Each mean the tool reported against the one recomputed from the rebuilt records: agreement shows
    the mapping reproduces the tool; a difference is named (ITL over multi-token chunks differs by design)."""
    out = []
    for name, reported in run.reported.items():
        ours = ((summary.get("latency") or {}).get(name) or {}).get("mean")
        if reported.unit != "s" or reported.mean is None or ours is None:
            continue
        gap = abs(ours - reported.mean) / max(abs(reported.mean), 1e-12)
        agrees = bool(gap <= AGREE)
        word = "matches" if agrees else "differs from"
        out.append(
            {
                "metric": name,
                "theirs": reported.mapping.theirs,
                "reported_mean_s": reported.mean,
                "recomputed_mean_s": ours,
                "relative_gap": gap,
                "agrees": agrees,
                "message": f"recomputed mean {name} {ours * 1e3:.4g} ms {word} the tool's "
                f"{reported.mapping.theirs} {reported.mean * 1e3:.4g} ms ({gap:.1%})"
                + ("" if agrees or not reported.mapping.note else f": {reported.mapping.note}"),
            }
        )
    return out


def reported_table(runs: dict[str, dict[str, Reported]]) -> list[str]:
    """Console lines: each run's reported means in ms, for `batchmark import`'s closing summary."""
    lines = []
    for label, reported in runs.items():
        parts = [
            f"{k} {r.mean * 1e3:.4g} ms" if r.unit == "s" else f"{k} {r.mean:.4g} {r.unit}"
            for k, r in reported.items()
            if r.mean is not None
        ]
        lines.append(f"  {label}: " + (", ".join(parts) or "no aggregates"))
    return lines


def _write_json(path: Path, data: dict[str, Any]) -> None:
    path.write_text(json.dumps(jsonable(data), indent=2, allow_nan=False) + "\n")
