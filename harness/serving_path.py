"""What a fleet's cluster twin lacks, measured on a run through a router over `batchmark serve` replicas.

docs/cluster/real_router.sh saves, beside each run's records, every replica's share of it in RUN/replicas/:
`rN.steps.jsonl` (the steps `batchmark serve --step-trace` wrote during the run) and `rN.before.prom` /
`rN.after.prom` (its /metrics just before and after). From them, three numbers say where the time goes:

- contention: the replicas' step time over the profile's price of the same steps (the profile was fitted on
  one engine alone in process; here two engines, two frontends, the router and the client share the cores);
- server TTFT: the replicas' mean time from a request reaching the server to its first token (/metrics'
  TTFT histogram, sum over count, differenced across the run);
- path: the client's TTFT minus the server's: the HTTP client, the router hop, the frontend before the engine
  and the tokens' way back. Where the records carry each request's own server TTFT (`server_ttft_s`: replicas
  of a `batchmark serve` that says it per request), the median over requests of client TTFT minus server TTFT,
  robust to a stalled request; else the client's mean TTFT (the run's metrics) minus the server TTFT above, a
  difference of means that one request the machine stalled moves. `Evidence.path_source` says which.
- paired path (`paired_path_s`): one request at a time, the median over requests of a served run's TTFT minus
  the same request's TTFT in process (two runs of one schedule): everything `batchmark serve` adds to what the
  profile was fitted on, robust to a stalled request; what the twin takes when the bench measured it.

`serving_path` turns a CALIBRATION run's evidence into the two options of the cluster twin (`slowdown` of
every replica's steps, `path_ms` of every request) and writes them with their provenance; `sim fidelity
--serving FILE` applies them to another run's twin, never to the run they came from (the script keeps the two
apart).
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from engines.http.scrape_names import ScrapeParseError, parse_prometheus
from engines.sim.files import read_json_object
from engines.sim.fitted import load_profile
from engines.step_features import StepFeatures
from harness.errors import HarnessInputError
from harness.metrics.frame import load_records, read_numbered
from harness.metrics.serving_path import path_seconds
from harness.simulation import trace_steps

TTFT = "batchmark_time_to_first_token_seconds"
STEPS = "batchmark_step_seconds"


@dataclass(frozen=True)
class Evidence:
    """One run's measured split (seconds)."""

    steps: int
    step_real_s: float  # the replicas' steps, summed
    step_priced_s: float  # the profile's price of the same steps, summed
    step_ratio_median: float  # of real over priced, step by step
    gap_real_s: float  # mean time between two steps of a busy replica
    gap_priced_s: float  # the profile's step gap (what the twin adds per step)
    requests: int  # first tokens the servers counted
    server_ttft_s: float  # mean, request at the server -> its first token
    client_ttft_s: float  # mean, scheduled arrival -> first token at the client
    # median over requests of client TTFT - the server's own TTFT of that request (records' `server_ttft_s`);
    # None when no record carries one (a server that does not say: the path is the difference of means)
    per_request_path_s: float | None = None
    per_request_paths: int = 0  # the requests it is the median of

    @property
    def contention(self) -> float:
        return self.step_real_s / self.step_priced_s

    @property
    def mean_path_s(self) -> float:
        return self.client_ttft_s - self.server_ttft_s

    @property
    def path_s(self) -> float:
        return self.mean_path_s if self.per_request_path_s is None else self.per_request_path_s

    @property
    def path_source(self) -> str:
        if self.per_request_path_s is None:
            return "mean client TTFT - mean server TTFT (/metrics histograms): the records carry no server_ttft_s"
        return f"per request: median over {self.per_request_paths} requests of client TTFT - server_ttft_s"


@dataclass(frozen=True)
class ServingPath:
    """The cluster twin's two measured options, and where they were measured."""

    path_ms: float  # every request waits this long before the router sees it (engines/sim/cluster.py)
    slowdown: float  # every replica step takes this share longer (the sim option `slowdown`)
    measured_on: str  # the calibration run
    profile: str  # the profile its steps were priced with

    def describe(self) -> str:
        return (
            f"path_ms={self.path_ms:.2f} and slowdown={self.slowdown:.3f}, measured on {self.measured_on} "
            f"(steps priced with {self.profile})"
        )


def run_evidence(run_dir: Path, profile_path: Path) -> Evidence:
    """The split of one run through a router (RUN/replicas/ as the bench script saves it)."""
    folder = run_dir / "replicas"
    traces = sorted(folder.glob("r*.steps.jsonl"))
    if not traces:
        raise HarnessInputError(
            f"{folder}: no replica step traces (rN.steps.jsonl): run the bench script, whose "
            "replicas write them (batchmark serve --step-trace)"
        )
    profile = load_profile(profile_path)
    steps = trace_steps(traces)
    if not len(steps.duration_s):
        raise HarnessInputError(f"{folder}: the replicas' step traces hold no step")
    priced = np.array([profile.step_time(StepFeatures(*map(int, row))) for row in steps.features])
    count = ttft_sum = 0.0
    for trace in traces:
        name = trace.name.removesuffix(".steps.jsonl")
        before, after = (_prometheus(folder / f"{name}.{when}.prom") for when in ("before", "after"))
        count += after.get(f"{TTFT}_count", 0.0) - before.get(f"{TTFT}_count", 0.0)
        ttft_sum += after.get(f"{TTFT}_sum", 0.0) - before.get(f"{TTFT}_sum", 0.0)
    if count <= 0:
        raise HarnessInputError(f"{folder}: the replicas' /metrics counted no first token during the run")
    return Evidence(
        steps=len(priced),
        step_real_s=float(steps.duration_s.sum()),
        step_priced_s=float(priced.sum()),
        step_ratio_median=float(np.median(steps.duration_s / priced)),
        gap_real_s=float(steps.gaps_s.mean()) if len(steps.gaps_s) else 0.0,
        gap_priced_s=profile.step_gap_s,
        requests=int(count),
        server_ttft_s=ttft_sum / count,
        client_ttft_s=_client_ttft(run_dir),
        **_per_request_path(run_dir),
    )


def _per_request_path(run_dir: Path) -> dict[str, Any]:
    """The median per-request path of the run's records, where they carry the servers' own TTFTs (a run kept
    without its records, as a summary-only fixture, has none)."""
    records = run_dir / "records.jsonl"
    if not records.exists():
        return {}
    _, _, paths = path_seconds(load_records(records))
    if not paths.size:
        return {}
    return {"per_request_path_s": float(np.median(paths)), "per_request_paths": int(paths.size)}


def paired_path_s(served: Path, in_process: Path) -> tuple[float, int]:
    """(median over requests of TTFT served minus TTFT in process, requests paired): two runs of one schedule."""
    served_ttft, in_process_ttft = _ttfts(served), _ttfts(in_process)
    both = sorted(served_ttft.keys() & in_process_ttft.keys())
    if not both:
        raise HarnessInputError(f"{served} and {in_process}: no request served in both (runs of one schedule?)")
    return float(np.median([served_ttft[r] - in_process_ttft[r] for r in both])), len(both)


def serving_path(
    run_dir: Path, profile_path: Path, paired: tuple[Path, Path] | None = None
) -> tuple[ServingPath, Evidence]:
    """The twin's options from a calibration run: its step contention, and its path (or, given `paired` runs,
    their paired path). A path or contention measured below zero (the real run faster than the profile's
    price) is kept at 0: the options add time, they never take it away."""
    evidence = run_evidence(run_dir, profile_path)
    path_s, measured_on = evidence.path_s, str(run_dir)
    if paired is not None:
        path_s, _ = paired_path_s(*paired)
        measured_on = f"{run_dir} (contention), {paired[0]} against {paired[1]} (path)"
    options = ServingPath(
        path_ms=round(max(0.0, path_s) * 1e3, 3),
        slowdown=round(max(0.0, evidence.contention - 1.0), 4),
        measured_on=measured_on,
        profile=str(profile_path),
    )
    return options, evidence


def evidence_lines(evidence: Evidence) -> list[str]:
    e = evidence
    return [
        f"steps: {e.steps} on the replicas, {e.step_real_s * 1e3:.0f} ms in all against the profile's "
        f"{e.step_priced_s * 1e3:.0f} ms for the same shapes: x{e.contention:.3f} "
        f"(median step x{e.step_ratio_median:.3f})",
        f"gap between steps: {e.gap_real_s * 1e3:.3f} ms measured, {e.gap_priced_s * 1e3:.3f} ms in the profile",
        f"TTFT mean: client {e.client_ttft_s * 1e3:.2f} ms, servers {e.server_ttft_s * 1e3:.2f} ms "
        f"({e.requests} first tokens): difference {e.mean_path_s * 1e3:.2f} ms",
        f"path: {e.path_s * 1e3:.2f} ms, {e.path_source}",
    ]


def save_serving(options: ServingPath, path: Path) -> None:
    path.write_text(json.dumps(asdict(options), indent=2) + "\n", encoding="utf-8")


def load_serving(path: Path) -> ServingPath:
    """A serving-path file, each number checked: one line naming the file and field if it is not."""
    data = read_json_object(path, "serving-path file")
    values: dict[str, Any] = {}
    for name in ("path_ms", "slowdown"):
        value = data.get(name)
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
            raise HarnessInputError(f"{path}: field {name}: {value!r} is not a finite number >= 0")
        values[name] = float(value)
    for name in ("measured_on", "profile"):
        if not isinstance(data.get(name), str) or not data[name]:
            raise HarnessInputError(f"{path}: field {name}: missing (where the values were measured)")
        values[name] = data[name]
    return ServingPath(**values)


def _prometheus(path: Path) -> dict[str, float]:
    try:
        return parse_prometheus(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise HarnessInputError(f"{path}: cannot read the replica's /metrics ({exc.strerror or exc})") from None
    except ScrapeParseError as exc:
        raise HarnessInputError(f"{path}: {exc}") from None


def _ttfts(run_dir: Path) -> dict[str, float]:
    """Request id -> TTFT (first token - scheduled arrival) of the run's served requests."""
    path = run_dir / "records.jsonl"
    rows, lines, _ = read_numbered(path)
    ttfts: dict[str, float] = {}
    for row, line in zip(rows, lines, strict=True):
        first, scheduled = row.get("t_first_token"), row.get("t_scheduled")
        if first is None or scheduled is None:
            continue  # failed before its first token, or never sent: no TTFT to pair
        for name, value in (("t_first_token", first), ("t_scheduled", scheduled)):
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise HarnessInputError(f"{path}:{line}: field {name}: expected seconds (a number), found {value!r}")
        ttfts[str(row.get("request_id"))] = float(first) - float(scheduled)
    return ttfts


def _client_ttft(run_dir: Path) -> float:
    engines = read_json_object(run_dir / "metrics.json", "run's metrics").get("engines") or {}
    if len(engines) != 1:
        raise HarnessInputError(
            f"{run_dir}/metrics.json: field engines: one engine (the router's run), not {len(engines)}"
        )
    (summary,) = engines.values()
    mean = ((summary.get("latency") or {}).get("ttft") or {}).get("mean")
    if not isinstance(mean, int | float):
        raise HarnessInputError(f"{run_dir}/metrics.json: field latency.ttft.mean: missing")
    return float(mean)
