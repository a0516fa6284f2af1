"""The verdict as Markdown, for a CI step summary or a pull-request comment."""

from __future__ import annotations

import math

from harness.gate.verdict import EXIT_NO_DATA, RuleResult, Verdict

MARKS = {"pass": "✅ pass", "inconclusive": "⚠️ not significant", "fail": "❌ regression", "no_data": "❌ no data"}


def fmt_value(value: float | None, unit: str, signed: bool = False) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if math.isinf(value):
        return "+inf" if value > 0 else "-inf"
    sign = "+" if signed else ""
    if unit == "s":
        return f"{value * 1e3:{sign}.3g} ms" if abs(value) < 1 else f"{value:{sign}.3g} s"
    if unit == "share":
        return f"{value * 100:{sign}.2f}%"
    return f"{value:{sign}.4g} {unit}"


def fmt_change(r: RuleResult, value: float | None) -> str:
    if r.threshold_kind == "relative":
        if value is None or math.isnan(value):
            return "-"
        return "+inf" if math.isinf(value) else f"{value * 100:+.1f}%"
    return fmt_value(value, r.unit, signed=r.threshold_kind == "delta")


def to_markdown(verdict: Verdict) -> str:
    if verdict.passed:
        head = "✅ pass"
    elif verdict.exit_code == EXIT_NO_DATA:
        head = f"❌ no data: {len(verdict.failed)} of {len(verdict.results)} rules could not be judged"
    else:
        head = f"❌ {len(verdict.failed)} of {len(verdict.results)} rules failed"
    lines = [f"## batchmark gate: {head}", ""]
    cand = verdict.candidate
    if verdict.baseline is not None:
        base = verdict.baseline
        lines.append(
            f"baseline `{base['source']}` ({base['engine']}, {base['requests']} requests) vs candidate "
            f"`{cand['source']}` ({cand['engine']}, {cand['requests']} requests)"
        )
    else:
        lines.append(f"candidate `{cand['source']}` ({cand['engine']}, {cand['requests']} requests)")
    pairing = verdict.pairing
    how = "" if verdict.baseline is None else "paired: " if pairing["paired"] else "unpaired: "
    lines += [f"{how}{pairing['reason']}; alpha {verdict.settings['alpha']}", ""]
    lines.append("| rule | baseline | candidate | change | interval | p | test | result |")
    lines.append("|---|---|---|---|---|---|---|---|")
    for r in verdict.results:
        interval = "-" if r.ci_low is None else f"{fmt_change(r, r.ci_low)} … {fmt_change(r, r.ci_high)}"
        p = "-" if r.p_value is None else f"{r.p_value:.2g}"
        cells = [
            f"`{r.rule}`",
            fmt_value(r.baseline, r.unit),
            fmt_value(r.candidate, r.unit),
            fmt_change(r, r.change),
            interval,
            p,
            _test(r),
            MARKS[r.status],
        ]
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    lines += [f"- `{r.rule}`: **no data**: {r.note}" for r in verdict.results if r.status == "no_data"]
    lines.append("")
    lines.append("A rule fails only when the change is past its threshold and significant (p <= alpha, one-sided); "
                 "each interval end is a one-sided (1 - alpha) bound. A rule with no data fails the gate.")  # fmt: skip
    lines += [f"- note: {note}" for note in verdict.notes]
    return "\n".join(lines) + "\n"


def _test(r: RuleResult) -> str:
    if r.trial_sd is None:
        return r.test or "-"
    noise = f"{r.trial_sd:.1%}" if r.threshold_kind == "relative" else fmt_value(r.trial_sd, r.unit)
    return f"{r.test}; one trial's change has sd {noise}"


def one_line(verdict: Verdict) -> str:
    """For the console: the verdict and the failing rules."""
    if verdict.passed:
        return f"gate: pass ({len(verdict.results)} rules)"
    failed = "; ".join(_failure(r) for r in verdict.failed)
    return f"gate: {'NO DATA' if verdict.exit_code == EXIT_NO_DATA else 'REGRESSION'}: {failed}"


def _failure(r: RuleResult) -> str:
    if r.status == "no_data":
        return f"{r.rule} (no data: {r.note})"
    return f"{r.rule} ({r.status}: {fmt_change(r, r.change)}, p={r.p_value:.2g})"
