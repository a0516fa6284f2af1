"""Simulated engines in a report: said on every page that shows their numbers, with the cost model.

A run's manifest marks each simulated engine (`"simulated": true`) and describes its cost model. The
report puts one line per simulated engine in its header, above every number, a "Simulation" section
with the cost models' parameters, and, when a run holds a measured engine and its simulated twin, the
fidelity table (`harness.metrics.simulation`): how far the simulation landed from what was measured.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harness.metrics.simulation import cost_model_text, fidelity_rows, manifest_notices, simulated_engines, twins
from reports.fmt import esc

__all__ = ["cost_model_text", "fidelity_html", "fidelity_tables", "notices", "simulated_engines"]

if TYPE_CHECKING:
    from reports.load import RunData


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

    def interval(r: dict[str, Any]) -> str:
        ci = r.get("real_ci")
        return "–" if not ci else f"[{value(ci[0], r['unit'])}, {value(ci[1], r['unit'])}]"

    def inside(r: dict[str, Any]) -> str:
        return {None: "–", True: "yes", False: "no"}[r.get("within_real_ci")]

    body = "".join(
        f"<tr><td>{esc(r['metric'])}</td><td>{value(r['real'], r['unit'])}</td><td>{interval(r)}</td>"
        f"<td>{value(r['simulated'], r['unit'])}</td><td>{error(r['error'])}</td><td>{inside(r)}</td></tr>"
        for r in rows
    )
    head = (
        f"<tr><th>metric</th><th>{esc(real)} (measured)</th><th>its 95% CI</th><th>{esc(sim)} (simulated)</th>"
        "<th>error</th><th>inside the CI</th></tr>"
    )
    return f'<table class="fidelity-table"><thead>{head}</thead><tbody>{body}</tbody></table>'
