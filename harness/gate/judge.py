"""Evaluate gate rules on a baseline and a candidate sample (pure: same inputs and seed, same verdict).

Per rule: the point estimate (relative change, delta or the candidate's own value), an interval from
the bootstrap, and a one-sided p-value from the test that fits the metric (harness.judge.tests).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd
from scipy import stats

from harness.errors import HarnessInputError
from harness.gate.catalog import LATENCY_METRICS, is_central, quantile_of
from harness.gate.config import GateConfig
from harness.gate.inputs import RunSample
from harness.gate.prepare import Prepared, Rates, prepare
from harness.gate.rules import Rule
from harness.gate.verdict import RuleResult, Verdict, quantity
from harness.judge import tests as sig
from harness.judge.pairing import Pairing, decide_pairing, paired_frame
from harness.judge.trials import compare_trials, use_trials
from harness.judge.verdict import decide, samples_needed, tail_is_resolved, values_to_resolve
from harness.metrics import SLO

_STATUS = {"holds": "pass", "fails": "fail", "cannot_tell": "inconclusive"}


@dataclass
class _Context:
    config: GateConfig
    pairing: Pairing
    base: Prepared | None
    cand: Prepared
    joined: pd.DataFrame | None  # both sides' per-request columns matched on the pairing key
    trials: tuple[list[int], list[int]] | None = None  # judged trial by trial (harness.judge.trials)
    trial_paired: bool = False  # trial k replayed the same schedule on both sides
    few_trials: str | None = None  # unit auto, too few trials to see run-to-run noise: why a change is undecidable


def evaluate(config: GateConfig, baseline: RunSample | None, candidate: RunSample) -> Verdict:
    """Every rule of `config` on the candidate, against the baseline (None: absolute limits only)."""
    relative = [r.text for r in config.rules if r.needs_baseline]
    if baseline is None and relative:
        raise HarnessInputError(f"rule {relative[0]!r} compares against a baseline; give --baseline RUN")
    _check_metrics(config, baseline, candidate)
    slo, notes = _slo(config, baseline, candidate)
    cand = prepare(candidate, slo, config.buckets)
    base = prepare(baseline, slo, config.buckets) if baseline is not None else None
    joined = None
    if baseline is not None and base is not None:
        pairing = decide_pairing(baseline, candidate, config.pairing, config.min_samples)
        if baseline.fingerprint and candidate.fingerprint and baseline.fingerprint != candidate.fingerprint:
            notes.append("the runs replayed different workloads (fingerprints differ)")
        if pairing.paired:
            joined = paired_frame(
                base.latencies, cand.latencies, pairing.key, [*LATENCY_METRICS, "meets_slo", "failed"]
            )
    else:
        pairing = Pairing(False, (), 0, "no baseline: absolute limits only")
    notes += _busy_notes(baseline, candidate)
    ctx = _Context(config, pairing, base, cand, joined)
    if baseline is not None and use_trials(config.unit, baseline.trials, candidate.trials, config.min_trials):
        ctx.trials = (baseline.trials, candidate.trials)
        ctx.trial_paired = pairing.paired and baseline.trials == candidate.trials
    elif baseline is not None and config.unit == "auto":
        fewest = min(len(baseline.trials), len(candidate.trials))
        ctx.few_trials = (
            f"{fewest} trial(s) on a side show no run-to-run noise (every request of a run moves with it): "
            f"give at least {config.min_trials} trials per side (batchmark run --repeat N), or --unit request "
            "to take requests as independent"
        )
    # each rule draws from its own stream, so adding a rule never changes another rule's result
    results = [evaluate_rule(rule, ctx, np.random.default_rng([config.seed, i])) for i, rule in enumerate(config.rules)]
    settings = {
        "alpha": config.alpha,
        "n_boot": config.n_boot,
        "seed": config.seed,
        "min_samples": config.min_samples,
        "pairing": config.pairing,
        "buckets": config.buckets,
        "slo": slo.to_json(),
        "unit": "trial" if ctx.trials else "request",
        "min_trials": config.min_trials,
        "allow_inconclusive": config.allow_inconclusive,
    }
    described = (_describe(baseline), _describe(candidate) or {})
    return Verdict(results, pairing.to_json(), *described, settings, notes, config.allow_inconclusive)


def evaluate_rule(rule: Rule, ctx: _Context, rng: np.random.Generator) -> RuleResult:
    alpha = rule.alpha if rule.alpha is not None else ctx.config.alpha
    result = RuleResult(
        rule=rule.text,
        name=rule.name,
        threshold_kind=rule.threshold.kind,
        threshold=rule.threshold.value,
        unit=rule.info.unit,
        status="no_data",
        alpha=alpha,
        line=rule.line,
    )
    absolute = ctx.base is None or rule.threshold.kind == "absolute"
    kind = "share" if rule.metric == "goodput" else rule.info.kind  # goodput's noise is in the SLO outcomes
    handlers = {
        ("latency", True): _latency_limit,
        ("latency", False): _latency_change,
        ("share", True): _share_limit,
        ("share", False): _share_change,
        ("rate", True): _rate_limit,
        ("rate", False): _rate_change,
    }
    handlers[(kind, absolute)](rule, ctx, rng, result)
    result = _decide(rule, result, ctx)
    if result.identical_trials and result.status != "no_data":  # the outcome stands, said to rest on no noise
        result.note = f"{result.note}; {sig.IDENTICAL_TRIALS}" if result.note else sig.IDENTICAL_TRIALS
    result.quantity = quantity(result)
    return result


def _decide(rule: Rule, r: RuleResult, ctx: _Context) -> RuleResult:
    if r.change is None or r.p_value is None or np.isnan(r.change):
        r.status = "no_data"
        r.note = r.note or "no value to judge on one side"
        return r
    if rule.needs_baseline and not rule.higher_is_worse and r.baseline == 0 and r.candidate == 0:
        # A ">=" rule's metric is one where more is better (throughput, goodput, attainment): zero on both
        # sides means neither run produced any, and "no change" would pass a candidate that did nothing.
        r.status = "no_data"
        r.note = f"{rule.name} is zero on both sides: neither run produced any, so there is no change to judge"
        return r
    limit = rule.threshold.value
    r.past_threshold = bool(r.change > limit if rule.higher_is_worse else r.change < limit)
    r.significant = bool(r.p_value <= r.alpha)
    if rule.needs_baseline and ctx.few_trials is not None:
        r.undecidable, r.note = True, ctx.few_trials
        r.needed, r.needed_unit = ctx.config.min_trials, "trials"
    if r.undecidable:
        r.status = "inconclusive"
        return r
    low, high = (float("nan") if x is None else x for x in (r.ci_low, r.ci_high))
    r.status = _STATUS[decide(low, high, limit, higher_is_worse=rule.higher_is_worse)]
    if r.status == "inconclusive" and (np.isnan(low) or np.isnan(high)):
        r.note = "the change has no interval (its ratio is undefined on the resamples: zero on a side)"
    elif r.status == "inconclusive":
        r.needed, r.needed_unit = _needed(rule, r, ctx, low, high)
        more = f"about {r.needed} {r.needed_unit} per side" if r.needed else "more data than is practical"
        straddles = (
            f"the interval straddles the threshold {rule.threshold.text}; {more} would decide it "
            "at the observed change and noise"
        )
        r.note = f"{straddles}; {r.note}" if r.note else straddles
    return r


def _needed(rule: Rule, r: RuleResult, ctx: _Context, low: float, high: float) -> tuple[int | None, str]:
    """Samples a side that would decide the rule if the change and its noise stay as observed."""
    assert r.change is not None
    limit, change = rule.threshold.value, r.change
    q = quantile_of(rule.stat or "mean")
    if q is not None and rule.threshold.kind == "absolute" and np.isinf([low, high]).any():
        # an open end of the order-statistic interval: the fewest values that bound the quantile at all
        return math.ceil(np.log(r.alpha) / np.log(max(q, 1.0 - q))), "requests"
    if r.trial_sd is not None:  # judged by trials: the t-test's own scale (log ratios for relative rules)
        log = rule.threshold.kind == "relative" and change > -1 and limit > -1
        gap = float(np.log1p(limit) - np.log1p(change)) if log else limit - change
        return samples_needed(r.trial_sd, gap, r.alpha, small=True), "trials"
    n = min(r.n_baseline, r.n_candidate) if r.n_baseline else r.n_candidate
    se = (high - low) / 2.0 / float(stats.norm.ppf(1.0 - r.alpha))  # each end a one-sided bound
    return samples_needed(se * np.sqrt(max(n, 1)), limit - change, r.alpha, small=False), "requests"


def _cut_off(rule: Rule, r: RuleResult, sides: list[tuple[str, Prepared]]) -> bool:
    """True (the reason in `r.note`) when a side's statistic is only a lower bound: a run whose stop rule
    cut requests off while they waited would otherwise be judged on the requests it did serve."""
    q = quantile_of(rule.stat or "mean")
    notes = [note for side, p in sides if (note := p.cut_off_note(rule.metric, side, q)) is not None]
    r.note = "; ".join(notes)
    return bool(notes)


def _too_few(ctx: _Context, r: RuleResult, n_baseline: int | None, n_candidate: int, what: str) -> bool:
    """True (and the reason in `r.note`) when a side holds fewer values than the gate's min_samples."""
    need = ctx.config.min_samples
    sides = ([] if n_baseline is None else [("baseline", n_baseline)]) + [("candidate", n_candidate)]
    short = [f"{n} on the {side} side" for side, n in sides if n < need]
    if not short:
        return False
    r.note = f"too few {what}: {' and '.join(short)}; the rule needs min_samples = {need}"
    return True


def _usable(ctx: _Context, r: RuleResult, sides: dict[str, Rates | None]) -> bool:
    """Whether each side's windowed rate can be judged; else the reason goes to `r.note` (status no_data)."""
    for side, rates in sides.items():
        if rates is None:
            r.note = f"{side}: no steady window"
            return False
        if rates.problem is not None:
            r.note = f"{side}: {rates.problem}"
            return False
    counts = {side: rates.requests for side, rates in sides.items() if rates is not None}
    what = "requests finished in" if next(iter(sides.values())).event == "finish" else "requests streaming in"
    return not _too_few(ctx, r, counts.get("baseline"), counts["candidate"], f"{what} the steady window")


def _worse(rule: Rule) -> sig.Side:
    return "greater" if rule.higher_is_worse else "less"


def _judge_trials(
    rule: Rule, ctx: _Context, r: RuleResult, per_trial: Callable[[Prepared, int], float], what: str
) -> bool:
    """When the gate judges trials, fill `r` from one statistic per trial and return True."""
    if ctx.trials is None or ctx.base is None:
        return False
    ta, tb = ctx.trials
    a = np.array([per_trial(ctx.base, t) for t in ta], dtype=np.float64)
    b = np.array([per_trial(ctx.cand, t) for t in tb], dtype=np.float64)
    r.paired, r.n_baseline, r.n_candidate = ctx.trial_paired, len(ta), len(tb)
    found = compare_trials(
        a,
        b,
        relative=rule.threshold.kind == "relative",
        paired=ctx.trial_paired,
        worse=_worse(rule),
        alpha=r.alpha,
        what=what,
    )
    if found is None:
        r.change = None
        r.note = "fewer than two trials with a value on a side"
        return True
    r.change, r.ci_low, r.ci_high = found.change, found.ci_low, found.ci_high
    r.p_value, r.test, r.trial_sd = found.p_value, found.test, found.trial_sd
    r.identical_trials = found.identical
    return True


def _latency_limit(rule: Rule, ctx: _Context, rng: np.random.Generator, r: RuleResult) -> None:
    stat, n_boot = rule.stat or "mean", ctx.config.n_boot
    if _cut_off(rule, r, [("candidate", ctx.cand)]):
        return
    b = ctx.cand.latency_values(rule.metric)
    r.n_candidate = b.size
    if _too_few(ctx, r, None, b.size, f"{rule.metric} values"):
        return
    r.candidate = r.change = sig.stat_value(b, stat)
    q = quantile_of(stat)
    if q is None:
        test = sig.limit_test_mean(b, rule.threshold.value, _worse(rule), n_boot=n_boot, rng=rng)
        r.ci_low, r.ci_high = sig.interval(sig.bootstrap_one(b, stat, n_boot, rng), r.alpha)
    else:  # exact, so a tail the sample cannot resolve shows as an open end, not a tight interval
        test = sig.limit_test_quantile(b, q, rule.threshold.value, _worse(rule))
        r.ci_low, r.ci_high = sig.quantile_bounds(b, q, r.alpha)
    r.p_value, r.test = test.p_value, test.test


def _latency_change(rule: Rule, ctx: _Context, rng: np.random.Generator, r: RuleResult) -> None:
    assert ctx.base is not None
    stat, metric = rule.stat or "mean", rule.metric
    if _cut_off(rule, r, [("baseline", ctx.base), ("candidate", ctx.cand)]):
        return
    paired = ctx.joined is not None and rule.info.per_request
    if paired:
        assert ctx.joined is not None
        a = ctx.joined[f"{metric}_a"].to_numpy(dtype=np.float64)
        b = ctx.joined[f"{metric}_b"].to_numpy(dtype=np.float64)
        keep = np.isfinite(a) & np.isfinite(b)
        a, b = a[keep], b[keep]
    else:
        a, b = ctx.base.latency_values(metric), ctx.cand.latency_values(metric)
    r.paired, r.n_baseline, r.n_candidate = paired, a.size, b.size
    if _too_few(ctx, r, a.size, b.size, f"{metric} values" + (" paired by request" if paired else "")):
        return
    relative = rule.threshold.kind == "relative"
    r.baseline, r.candidate = sig.stat_value(a, stat), sig.stat_value(b, stat)
    r.change = sig.change(r.baseline, r.candidate, relative)
    q = quantile_of(stat)
    if _judge_trials(rule, ctx, r, lambda p, t: sig.stat_value(p.latency_values(metric, t), stat), f"{rule.name}"):
        _trial_tail_note(rule, ctx, r, q)
        return
    sa, sb = sig.bootstrap_stat(a, b, stat, paired=paired, n_boot=ctx.config.n_boot, rng=rng)
    r.ci_low, r.ci_high = sig.interval(sig.change_replicates(sa, sb, relative), r.alpha)
    if is_central(stat):
        test = sig.rank_test(a, b, paired=paired, worse=_worse(rule))
    elif _unresolved(rule, r, q, min(a.size, b.size)):
        test = sig.quantile_test(a, b, q, paired=paired, worse=_worse(rule))
    else:
        test = sig.TestResult("bootstrap" + (" (paired)" if paired else ""), sig.bootstrap_p(sb - sa, _worse(rule)))
    r.p_value, r.test = test.p_value, test.test


def _unresolved(rule: Rule, r: RuleResult, q: float | None, n: int) -> bool:
    """True (undecidable, the reason in `r.note`) when n values per side cannot resolve quantile q: the
    percentile is (nearly) the sample's extreme and its interval would look tighter than it is."""
    if q is None or is_central(rule.stat or "mean") or tail_is_resolved(n, q):
        return False
    need = values_to_resolve(q)
    r.undecidable, r.needed, r.needed_unit = True, need, "requests"
    r.note = f"{rule.stat} of {n} values is about their extreme, not a resolved percentile: it needs {need} per side"
    return True


def _trial_tail_note(rule: Rule, ctx: _Context, r: RuleResult, q: float | None) -> None:
    """Judged by trials, a percentile each trial cannot resolve is a trial's extreme: the trials' noise is real,
    so the rule is decided on it, but the note says that it judged that extreme, not a resolved percentile."""
    if q is None or is_central(rule.stat or "mean") or ctx.trials is None or ctx.base is None:
        return
    sides = [(ctx.base, ctx.trials[0]), (ctx.cand, ctx.trials[1])]
    n = min(p.latency_values(rule.metric, t).size for p, trials in sides for t in trials)
    if tail_is_resolved(n, q):
        return
    need = values_to_resolve(q)
    caveat = (
        f"each trial's {rule.stat} is of as few as {n} values, about their extreme: the trials judge "
        f"that extreme, not a resolved {rule.stat} (it needs {need} values per trial)"
    )
    r.note = f"{r.note}; {caveat}" if r.note else caveat


def _column(rule: Rule) -> str:
    return "failed" if rule.metric == "error_rate" else "meets_slo"


def _share_limit(rule: Rule, ctx: _Context, rng: np.random.Generator, r: RuleResult) -> None:
    if rule.metric == "goodput":
        _rate_limit(rule, ctx, rng, r)
        return
    x = ctx.cand.latencies[_column(rule)].to_numpy(dtype=bool)
    r.n_candidate = x.size
    if _too_few(ctx, r, None, x.size, "requests"):
        return
    r.candidate = r.change = float(x.mean())
    test = sig.limit_test_share(int(x.sum()), x.size, rule.threshold.value, _worse(rule))
    r.ci_low, r.ci_high = sig.share_bounds(int(x.sum()), x.size, r.alpha)  # exact: 0 of 16 is not "0%"
    r.p_value, r.test = test.p_value, test.test


def _share_change(rule: Rule, ctx: _Context, rng: np.random.Generator, r: RuleResult) -> None:
    """A share of requests, or goodput: the test asks whether the event (failure, meeting the SLO) moved the
    wrong way request by request; goodput's value and interval come from its window like any rate."""
    assert ctx.base is not None
    column, paired = _column(rule), ctx.joined is not None
    if ctx.joined is not None:
        xa = ctx.joined[f"{column}_a"].to_numpy(dtype=bool)
        xb = ctx.joined[f"{column}_b"].to_numpy(dtype=bool)
    else:
        xa = ctx.base.latencies[column].to_numpy(dtype=bool)
        xb = ctx.cand.latencies[column].to_numpy(dtype=bool)
    r.paired, r.n_baseline, r.n_candidate = paired, xa.size, xb.size
    if _too_few(ctx, r, xa.size, xb.size, "requests"):
        return
    relative = rule.threshold.kind == "relative"
    test = sig.proportion_test(xa, xb, paired=paired, worse=_worse(rule))
    if rule.metric == "goodput":
        ra, rb = ctx.base.rates("goodput"), ctx.cand.rates("goodput")
        if not _usable(ctx, r, {"baseline": ra, "candidate": rb}) or ra is None or rb is None:
            return
        r.baseline, r.candidate = ra.value, rb.value
        r.change = sig.change(r.baseline, r.candidate, relative)
        if _judge_trials(rule, ctx, r, lambda p, t: _trial_rate(p, "goodput", t), "goodput"):
            return
        same_slices = paired and ra.slices.size == rb.slices.size
        sa, sb = sig.bootstrap_stat(ra.slices, rb.slices, "mean", paired=same_slices, n_boot=ctx.config.n_boot, rng=rng)
        r.test = f"{test.test} on SLO outcomes"
    else:
        r.baseline, r.candidate = float(xa.mean()), float(xb.mean())
        r.change = sig.change(r.baseline, r.candidate, relative)
        if _judge_trials(rule, ctx, r, lambda p, t: float(np.mean(p.trial_column(column, t))), f"{column} shares"):
            return
        sa, sb = sig.bootstrap_stat(
            xa.astype(np.float64), xb.astype(np.float64), "mean", paired=paired, n_boot=ctx.config.n_boot, rng=rng
        )
        r.test = test.test
    r.change = sig.change(r.baseline, r.candidate, relative)
    r.ci_low, r.ci_high = sig.interval(sig.change_replicates(sa, sb, relative), r.alpha)
    r.p_value = test.p_value


def _rate_limit(rule: Rule, ctx: _Context, rng: np.random.Generator, r: RuleResult) -> None:
    rb = ctx.cand.rates(rule.metric)
    if not _usable(ctx, r, {"candidate": rb}) or rb is None:
        return
    r.n_candidate = rb.slices.size
    r.candidate = r.change = rb.value
    test = sig.limit_test_rates(rb.slices, rule.threshold.value, _worse(rule))
    r.ci_low, r.ci_high = sig.interval(sig.bootstrap_one(rb.slices, "mean", ctx.config.n_boot, rng), r.alpha)
    r.p_value, r.test = test.p_value, f"{test.test} on {rb.slices.size} window slices"


def _rate_change(rule: Rule, ctx: _Context, rng: np.random.Generator, r: RuleResult) -> None:
    """Throughput: per-slice rates of the window, paired slice by slice when the schedules are identical."""
    assert ctx.base is not None
    ra, rb = ctx.base.rates(rule.metric), ctx.cand.rates(rule.metric)
    if not _usable(ctx, r, {"baseline": ra, "candidate": rb}) or ra is None or rb is None:
        return
    paired = ctx.pairing.paired and ra.slices.size == rb.slices.size
    r.paired, r.n_baseline, r.n_candidate = paired, ra.slices.size, rb.slices.size
    relative = rule.threshold.kind == "relative"
    r.baseline, r.candidate = ra.value, rb.value
    r.change = sig.change(ra.value, rb.value, relative)
    if _judge_trials(rule, ctx, r, lambda p, t: _trial_rate(p, rule.metric, t), rule.metric):
        return
    sa, sb = sig.bootstrap_stat(ra.slices, rb.slices, "mean", paired=paired, n_boot=ctx.config.n_boot, rng=rng)
    r.ci_low, r.ci_high = sig.interval(sig.change_replicates(sa, sb, relative), r.alpha)
    test = sig.rank_test(ra.slices, rb.slices, paired=paired, worse=_worse(rule))
    r.p_value, r.test = test.p_value, f"{test.test} on {ra.slices.size} window slices"


def _trial_rate(p: Prepared, metric: str, trial: int) -> float:
    rates = p.rates(metric)
    return rates.per_trial.get(trial, float("nan")) if rates is not None else float("nan")


# the record field a metric is measured from, where some runs never record it
_SOURCE_FIELD = {"_sent": ("t_sent", "a send time"), "queue_delay": ("t_admitted", "an admission time")}


def _check_metrics(config: GateConfig, baseline: RunSample | None, candidate: RunSample) -> None:
    """Invalid input (before any work): a rule on a metric a run does not record at all, e.g. queue_delay of
    an HTTP run, which never sees admission. Some values missing is a different matter (no_data)."""
    for rule in config.rules:
        for side, sample in (("baseline", baseline if rule.needs_baseline else None), ("candidate", candidate)):
            for part, (column, what) in _SOURCE_FIELD.items():
                if sample is None or part not in rule.metric:
                    continue
                if column not in sample.records or not sample.records[column].notna().any():
                    where = f"line {rule.line}: " if rule.line else ""
                    raise HarnessInputError(
                        f"{where}rule {rule.text!r}: the {side} run ({sample.source}) records no {column} "
                        f"({what}), so it has no {rule.metric}"
                    )


def _slo(config: GateConfig, baseline: RunSample | None, candidate: RunSample) -> tuple[SLO, list[str]]:
    notes: list[str] = []
    given = (config.slo_ttft_ms, config.slo_tpot_ms, config.slo_e2e_ms)
    if any(v is not None for v in given):
        ttft, tpot, e2e = (None if v is None else v / 1e3 for v in given)
        return SLO(ttft_s=ttft, tpot_s=tpot, e2e_s=e2e), notes
    base_slo = baseline.slo if baseline is not None else None
    if base_slo is not None and candidate.slo is not None and base_slo != candidate.slo:
        notes.append(f"the runs were made with different SLOs; the baseline's is used ({asdict(base_slo)})")
    return base_slo or candidate.slo or SLO(), notes


def _busy_notes(baseline: RunSample | None, candidate: RunSample) -> list[str]:
    """A shared CI runner is the normal case: say which trials ran while the machine was busy."""
    notes = []
    for side, sample in (("baseline", baseline), ("candidate", candidate)):
        if sample is None or not sample.busy_trials:
            continue
        busy = sample.busy_trials
        which = ", ".join(str(t) for t in busy)
        notes.append(
            f"machine busy during {len(busy)} of {len(sample.trials)} {side} trial(s) ({which}): "
            f"{next(iter(busy.values()))}; their timings include the neighbours' load"
        )
    return notes


def _describe(sample: RunSample | None) -> dict[str, object] | None:
    if sample is None:
        return None
    return {
        "source": sample.source,
        "engine": sample.engine,
        "trials": sample.trials,
        "requests": len(sample.records),
        "fingerprint": sample.fingerprint,
        "busy_trials": sample.busy_trials,
        "machine": sample.machine,
    }
