"""The verdict as Markdown, for a CI step summary or a pull-request comment."""

from __future__ import annotations

import math

from harness.gate.verdict import RuleResult, Verdict

MARKS = {"pass": "✅ pass", "inconclusive": "⚠️ cannot tell", "fail": "❌ regression", "no_data": "❌ no data"}


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
    n, word = len(verdict.results), verdict.word
    if verdict.passed:
        allowed = sum(r.status == "inconclusive" for r in verdict.results)
        head = "✅ pass" + (f" ({allowed} of {n} rules cannot tell, allowed by allow_inconclusive)" if allowed else "")
    elif word == "no_data":
        head = f"❌ no data: {sum(r.status == 'no_data' for r in verdict.results)} of {n} rules could not be judged"
    elif word == "cannot_tell":
        head = f"⚠️ cannot tell: {len(verdict.failed)} of {n} rules are not decided by the data"
    else:
        head = f"❌ {sum(r.status == 'fail' for r in verdict.results)} of {n} rules failed"
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
        interval += " (identical trials: no noise)" if r.identical_trials else ""
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
    lines += [f"- `{r.rule}`: **cannot tell**: {r.note}" for r in verdict.results if r.status == "inconclusive"]
    lines += [f"- `{r.rule}`: {r.note}" for r in verdict.results if r.status in ("pass", "fail") and r.note]
    lines.append("")
    lines += [f"- `{r.rule}` tests {r.quantity}" for r in verdict.results if r.quantity]
    lines.append("")
    lines.append(
        "Each interval end is a one-sided (1 - alpha) bound. A rule passes when the interval's worse end is "
        "inside its threshold, fails when its better end is outside, and otherwise cannot tell, which "
        "fails the gate (exit 3) unless allow_inconclusive; so does a rule with no data."
    )
    lines += [f"- note: {note}" for note in verdict.notes]
    return "\n".join(lines) + "\n"


def _test(r: RuleResult) -> str:
    if r.trial_sd is None:
        return r.test or "-"
    noise = f"{r.trial_sd:.1%}" if r.threshold_kind == "relative" else fmt_value(r.trial_sd, r.unit)
    return f"{r.test}; one trial's change has sd {noise}"


def one_line(verdict: Verdict) -> str:
    """For the console: the verdict and the failing rules, and whether it rests on trials that are copies."""
    copies = sum(r.identical_trials for r in verdict.results)
    said = f" [{copies} of {len(verdict.results)} rules on identical trials: no run-to-run noise]" if copies else ""
    if verdict.passed:
        allowed = sum(r.status == "inconclusive" for r in verdict.results)
        head = f"gate: pass ({len(verdict.results)} rules" + (f", {allowed} cannot tell, allowed)" if allowed else ")")
        return head + said
    failed = "; ".join(_failure(r) for r in verdict.failed)
    head = {"fail": "REGRESSION", "no_data": "NO DATA", "cannot_tell": "CANNOT TELL"}[verdict.word]
    return f"gate: {head}: {failed}{said}"


def _failure(r: RuleResult) -> str:
    if r.status == "no_data":
        return f"{r.rule} (no data: {r.note})"
    interval = "" if r.ci_low is None else f" [{fmt_change(r, r.ci_low)} … {fmt_change(r, r.ci_high)}]"
    if r.status == "inconclusive":
        return f"{r.rule} (cannot tell: {fmt_change(r, r.change)}{interval}; {r.note})"
    return f"{r.rule} (fail: {fmt_change(r, r.change)}{interval}, p={r.p_value:.2g})"
