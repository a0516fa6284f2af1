"""Simulated engines in a report: said on every page that shows their numbers, with the cost model.

A run's manifest marks each simulated engine (`"simulated": true`) and describes its cost model. The
report puts one line per simulated engine in its header, above every number, a "Simulation" section
with the cost models' parameters, and, when a run holds a measured engine and its simulated twin, the
fidelity table (`harness.metrics.fidelity`): how far the simulation landed from what was measured.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harness.metrics.fidelity import fidelity_rows, twins
from reports.fmt import esc

if TYPE_CHECKING:
    from reports.load import RunData


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
            f"MFU prefill {p.get('mfu_prefill')}, decode {p.get('mfu_decode')}; MBU {p.get('mbu')}; "
            f"{p.get('overhead_ms')} ms per-step overhead{pool}"
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


def manifest_notices(manifest: dict[str, Any], prefix: str = "") -> list[str]:
    """One line per simulated engine of a run: what it is and what it ran on."""
    return [
        f"SIMULATED: {prefix}{name} ran in virtual time, its step times predicted by the {cost_model_text(engine)}."
        for name, engine in simulated_engines(manifest).items()
    ]


def notices(runs: list[RunData]) -> list[str]:
    return [line for run in runs for line in manifest_notices(run.manifest, f"{run.label}/" if len(runs) > 1 else "")]


def fidelity_tables(runs: list[RunData]) -> list[tuple[str, str, list[dict[str, Any]]]]:
    """(measured engine, simulated twin, fidelity rows) for every twin pair with summaries."""
    out = []
    for run in runs:
        summaries = {er.engine: er.summary for er in run.primary()}
        for real, sim in twins(run.manifest.get("engines") or []):
            if real in summaries and sim in summaries:
                out.append((real, sim, fidelity_rows(summaries[real], summaries[sim])))
    return out


def fidelity_html(real: str, sim: str, rows: list[dict[str, Any]]) -> str:
    def value(v: float | None, unit: str) -> str:
        if v is None:
            return "–"
        return f"{v * 1e3:.1f} ms" if unit == "s" else f"{v:,.1f}"

    def error(e: float | None) -> str:
        return "–" if e is None else f"{e:+.1%}"

    body = "".join(
        f"<tr><td>{esc(r['metric'])}</td><td>{value(r['real'], r['unit'])}</td>"
        f"<td>{value(r['simulated'], r['unit'])}</td><td>{error(r['error'])}</td></tr>"
        for r in rows
    )
    head = f"<tr><th>metric</th><th>{esc(real)} (measured)</th><th>{esc(sim)} (simulated)</th><th>error</th></tr>"
    return f'<table class="fidelity-table"><thead>{head}</thead><tbody>{body}</tbody></table>'
