"""Simulated engines in a run: what they are (one line each, from the manifest), and their fidelity,
how far a simulated engine's headline metrics land from a measured twin's.

Pure functions of summaries (`harness.metrics.summarize`) and of the engine descriptions in a run's
manifest, so the console, the CLI (`batchmark sim fidelity`) and the report say the same.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class FidelityMetric:
    name: str
    path: tuple[str, ...]  # where it sits in a summary
    unit: str
    trials_key: str  # its per-trial values in metrics.json's "repeat" block (`compare_runs.HEADLINE`)


FIDELITY_METRICS = (
    FidelityMetric("TTFT p50", ("latency", "ttft", "percentiles", "p50", "value"), "s", "ttft_p50_s"),
    FidelityMetric("TTFT p99", ("latency", "ttft", "percentiles", "p99", "value"), "s", "ttft_p99_s"),
    FidelityMetric("TPOT p50", ("latency", "tpot", "percentiles", "p50", "value"), "s", "tpot_p50_s"),
    FidelityMetric("TPOT p99", ("latency", "tpot", "percentiles", "p99", "value"), "s", "tpot_p99_s"),
    FidelityMetric("E2E p50", ("latency", "e2e", "percentiles", "p50", "value"), "s", "e2e_p50_s"),
    FidelityMetric("E2E p99", ("latency", "e2e", "percentiles", "p99", "value"), "s", "e2e_p99_s"),
    FidelityMetric("output tok/s", ("throughput", "steady", "output_token_rate"), "tok/s", "output_tok_s"),
)


def metric_value(summary: Mapping[str, Any], path: tuple[str, ...]) -> float | None:
    node: Any = summary
    for key in path:
        if not isinstance(node, Mapping) or key not in node:
            return None
        node = node[key]
    return float(node) if isinstance(node, int | float) and math.isfinite(node) else None


def twins_median(simulated: Sequence[Mapping[str, Any]], path: tuple[str, ...]) -> float | None:
    """The twins' median of one metric; None unless every twin has it."""
    values = [v for v in (metric_value(t, path) for t in simulated) if v is not None]
    return float(statistics.median(values)) if values and len(values) == len(simulated) else None


def _ci(summary: Mapping[str, Any], path: tuple[str, ...]) -> tuple[float, float] | None:
    """The 95% interval a percentile was measured with (None: a throughput, or no interval)."""
    low, high = metric_value(summary, (*path[:-1], "ci_low")), metric_value(summary, (*path[:-1], "ci_high"))
    return (low, high) if path[-1] == "value" and low is not None and high is not None else None


def fidelity_rows(
    real: Mapping[str, Any], *simulated: Mapping[str, Any], trials: Mapping[str, Any] | None = None
) -> list[dict[str, Any]]:
    """One row per fidelity metric: real value, simulated value, relative error (None: no data).

    Several simulated summaries (twins with different noise seeds) are one estimate: their median,
    with their range, so the simulator's own sampling spread is not charged to the cost model. A
    percentile over a few dozen requests is uncertain in the measurement too: `real_ci` is its 95%
    interval and `within_real_ci` says whether the simulation landed inside it.

    `trials` (a run's per-trial values, metrics.json's "repeat" block for the engine): with two or more
    trials of the same schedule, the real value is their median, and `trials_spread` is how far the
    furthest trial lies from it. That is the floor of any fidelity claim: a simulation cannot be judged
    closer to a measurement than the measurement repeats (on this machine, 20-90% for some workloads)."""
    rows = []
    for metric in FIDELITY_METRICS:
        r = metric_value(real, metric.path)
        per_trial = [float(v) for v in ((trials or {}).get(metric.trials_key) or {}).get("values") or []]
        spread = None
        if len(per_trial) >= 2:
            r = float(statistics.median(per_trial))
            spread = max(abs(v / r - 1.0) for v in per_trial) if r else None
        values = [v for v in (metric_value(x, metric.path) for x in simulated) if v is not None]
        s = twins_median(simulated, metric.path)
        error = (s - r) / r if r not in (None, 0.0) and s is not None else None
        ci = _ci(real, metric.path) if spread is None else None  # trial 0's interval is not the median's
        rows.append(
            {
                "metric": metric.name,
                "unit": metric.unit,
                "real": r,
                "simulated": s,
                "error": error,
                "simulated_range": [min(values), max(values)] if s is not None and len(values) > 1 else None,
                "real_ci": list(ci) if ci else None,
                "within_real_ci": None if ci is None or s is None else ci[0] <= s <= ci[1],
                "real_trials": per_trial if spread is not None else None,
                "trials_spread": spread,
            }
        )
    return rows


def twins(engines: Sequence[Mapping[str, Any]]) -> list[tuple[str, str]]:
    """(real label, simulated label) pairs in one run: a sim engine names its twin with `twin=`, or
    is paired with the one measured engine that runs the same scheduler."""
    real = [e for e in engines if not e.get("simulated")]
    pairs = []
    for sim in (e for e in engines if e.get("simulated")):
        twin = (sim.get("simulated_with") or {}).get("twin")
        if twin is None:
            same = [e["name"] for e in real if e.get("kind") == sim.get("scheduler")]
            twin = same[0] if len(same) == 1 else None
        if twin is not None and any(e["name"] == twin for e in real):
            pairs.append((str(twin), str(sim["name"])))
    return pairs


def simulated_engines(manifest: dict[str, Any]) -> dict[str, dict[str, Any]]:
    engines = manifest.get("engines") if isinstance(manifest, dict) else None
    return {str(e.get("name")): e for e in engines or [] if isinstance(e, dict) and e.get("simulated")}


def cost_model_text(engine: dict[str, Any]) -> str:
    """One line: which cost model, on what, with which parameters."""
    cm = engine.get("cost_model") or {}
    blocks = engine.get("kv_blocks")
    pool = f"; KV pool {blocks:,} blocks" if isinstance(blocks, int) else ""
    if cm.get("kind") == "roofline":
        model, hw, p = cm.get("model") or {}, cm.get("hardware") or {}, cm.get("params") or {}
        return (
            f"roofline cost model: {model.get('name')} on {cm.get('tp')} x {hw.get('name')} "
            f"({hw.get('bf16_tflops')} TFLOPS bf16 dense, {hw.get('memory_tb_s')} TB/s, {hw.get('memory_gb')} GB); "
            f"weights {p.get('precision', 'bf16')}, KV {p.get('kv_precision', 'bf16')}; "
            f"MFU prefill {p.get('mfu_prefill')}, decode {p.get('mfu_decode')}; MBU {p.get('mbu')}; "
            f"{p.get('overhead_ms')} ms per-step overhead{_calibrated_terms(engine, p)}{pool}"
        )
    if cm.get("kind") == "fitted":
        fit = cm.get("fit") or {}
        coef = cm.get("coefficients") or {}
        terms = ", ".join(f"{k} {v * 1e6:.3g} us" for k, v in coef.items() if v)
        r2 = fit.get("r2")
        quality = f", R^2 {r2:.3f}" if isinstance(r2, int | float) else ""
        source = (engine.get("simulated_with") or {}).get("profile")
        return (
            f"fitted cost model {source or ''}: step = {cm.get('intercept_s', 0) * 1e6:.0f} us + {terms}; "
            f"{cm.get('step_gap_s', 0) * 1e6:.0f} us between steps (fitted on {fit.get('steps')} steps of "
            f"{fit.get('run_dir')}{quality}){pool}"
        )
    return f"cost model {cm.get('kind')!r}{pool}"


def _calibrated_terms(engine: dict[str, Any], p: dict[str, Any]) -> str:
    """The terms beyond the plain roofline, when any is set (a calibration sets them all)."""
    used = engine.get("simulated_with") or {}
    terms = [
        f"{p['layer_floor_us']} us per layer" if p.get("layer_floor_us") else "",
        f"{p['prefill_rows_half']} GEMM rows to half of MFU" if p.get("prefill_rows_half") else "",
        f"overlap {p['overlap']}" if p.get("overlap", 1.0) != 1.0 else "",
        f"attention at {p['attention_mfu']} of peak" if p.get("attention_mfu") else "",
        f"{p['activation_bytes'] / 1e3:g} kB per row per layer moved" if p.get("activation_bytes") else "",
        f"all-reduce +{p['allreduce_per_peer_us']} us per peer" if p.get("allreduce_per_peer_us") else "",
        f"{p['link_efficiency']:.1%} of link bandwidth" if p.get("link_efficiency", 1.0) != 1.0 else "",
    ]
    text = ", ".join(t for t in terms if t)
    if used.get("calibration"):
        text = f"calibration {used['calibration']}, stack {used.get('stack')}" + (f": {text}" if text else "")
    return f"; {text}" if text else ""


def manifest_notices(manifest: dict[str, Any], prefix: str = "") -> list[str]:
    """One line per simulated engine of a run: what it is and what it ran on."""
    from harness.gpu_truth.band import trust_text
    from harness.metrics.cluster import disagg_text, router_text
    from harness.metrics.sim_range import features_unknown, range_text, range_unknown

    lines = []
    unknown = []
    for name, engine in simulated_engines(manifest).items():
        lines.append(
            f"SIMULATED: {prefix}{name} ran in virtual time, its step times predicted by the {cost_model_text(engine)}."
        )
        for label, describe in (
            ("CLUSTER", router_text),
            ("P/D", disagg_text),
            ("TRUST", trust_text),
            ("RANGE", range_text),
        ):
            text = describe(engine)
            if text is not None:
                lines.append(f"{label}: {prefix}{name}: {text}.")
        if range_unknown(engine):
            unknown.append(f"{prefix}{name}")
        missing = features_unknown(engine)
        if missing:
            lines.append(
                f"FEATURES: {prefix}{name}: {missing}: feature unknown (a version-1 profile prices every "
                "attention pair alike, so long contexts and padded batches are extrapolated); refit it "
                "(`batchmark sim fit`) on a run recorded now."
            )
        spec = engine.get("spec_decode")
        if spec:
            lines.append(
                f"SPECULATIVE DECODING: {prefix}{name}: every figure is conditional on the measured "
                f"acceptance histogram {spec['histogram']} (k = {spec['k']}, mean acceptance length "
                f"{spec['mean_acceptance_length']:.2f}); the drafter's cost is not modelled."
            )
    if unknown:  # once, however many engines share the old profile
        lines.append(
            f"RANGE: {', '.join(unknown)}: range unknown: the profile records no fitted range (written "
            "before ranges were); refit it (`batchmark sim fit`) to see where it extrapolates."
        )
    return lines
