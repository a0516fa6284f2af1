"""Every pair of a suite against its twin: the seven errors (TTFT/TPOT/E2E p50 and p99, throughput), the real
run's trial spread, each metric's verdict, the pair's verdict (holds when all seven hold, fails when any fails,
else cannot tell), and per metric the median and the worst error over the suite. A pair without a real run is
reported too, as not measured."""

from __future__ import annotations

import json
import statistics
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from harness.errors import HarnessInputError
from harness.fidelity_suite.rule import Simulate, elasticities, verdict_fields
from harness.fidelity_suite.spec import Pair, Suite
from harness.judge.fidelity import pair_outcome, suite_outcome


def pair_entry(
    suite: Suite,
    pair: Pair,
    runs: Path,
    simulate: Simulate,
    seeds: int = 5,
    noise: bool = True,
    sensitivity: float | None = None,
) -> dict[str, Any]:
    """`seeds` twins of the pair's engine (each its own noise draw; compared by their median, as `sim fidelity`);
    `sensitivity` F: the same twins at step_scale 1 - F and 1 + F beside them (`harness.metrics.sensitivity`),
    reported; judged only where the suite registers its tipping rule (`[judge] tipping_elasticity`, at the
    suite's own fraction): a latency beyond it cannot tell in both verdicts."""
    from harness.fidelity_suite.speeds import real_engine
    from harness.metrics.sim_range import range_text
    from harness.metrics.simulation import fidelity_rows

    entry: dict[str, Any] = {
        "pair": pair.name,
        "covers": pair.covers,
        "engine": pair.engine,
        "profile": pair.profile,
        "rows": [],
        "verdict": "cannot_tell",
    }
    dirs = [runs / name for name in suite.pair_runs(pair)]
    absent = [d for d in dirs if not (d / "metrics.json").is_file()]
    if absent:
        entry["missing"] = f"not measured: no {absent[0] / 'metrics.json'}"
        if suite.at_trial_speed:
            from harness.fidelity_suite.at_speed import not_measured

            entry["at_trial_speed"] = not_measured()
        return entry
    run = dirs[0]
    engine = real_engine(run)
    metrics = json.loads((run / "metrics.json").read_text(encoding="utf-8"))
    trials = (metrics.get("repeat") or {}).get(engine["name"])
    if len(dirs) > 1:  # an interleaved suite: one trial a round, each its own run of the same schedule
        trials = _round_trials(dirs, engine["name"])
        entry["runs"] = [d.name for d in dirs]
    profile = runs / suite.profiles[pair.profile].file
    speeds = _pair_speeds(dirs, engine["name"], profile)
    if _known(speeds):  # traced runs (or their speeds.json): each trial's moment
        entry["trial_speeds"] = speeds
    described: list[dict[str, Any]] = []  # each twin's description after its run: where it extrapolated
    # headline: the rows read no more

    def twins_at(scale: float, described: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
        return [
            simulate(run, engine, profile, noise=noise, seed=s, described=described, headline=True, step_scale=scale)
            for s in range(seeds if noise else 1)
        ]

    twins = twins_at(1.0, described)
    entry["range"] = range_text(described[0])  # seeds differ only in noise: the first twin's steps
    block = None
    if suite.tipping is not None or sensitivity is not None:  # the registered rule's fraction (the command checks)
        from harness.metrics.sensitivity import sensitivity_block

        fraction = suite.tipping.fraction if suite.tipping is not None else sensitivity
        block = sensitivity_block(fraction, twins, twins_at)
    elastic = elasticities(block) if suite.tipping is not None else {}  # the rule judges by them, both verdicts
    rows = fidelity_rows(metrics["engines"][engine["name"]], *twins, trials=trials)
    for row in rows:
        metric, error, spread = row["metric"], row["error"], row["trials_spread"]
        entry["rows"].append(
            {
                "metric": metric,
                "unit": row["unit"],
                "real": row["real"],
                "simulated": row["simulated"],
                "error": error,
                "trials": len(row["real_trials"] or []) or 1,
                "trials_spread": spread,
                **verdict_fields(metric, error, spread, suite.targets, suite.tipping, elastic.get(metric)),
            }
        )
    entry["verdict"] = pair_outcome(r["verdict"] for r in entry["rows"])
    if block is not None:
        entry["sensitivity"] = block
    if suite.at_trial_speed:
        from harness.fidelity_suite.at_speed import at_speed_block

        real = metrics["engines"][engine["name"]]
        at = at_speed_block(suite, run, engine, profile, real, trials, speeds, simulate, seeds, noise, elastic)
        entry["at_trial_speed"] = at
    return entry


def _pair_speeds(dirs: list[Path], engine: str, profile: Path) -> list[float | None] | None:
    """Each trial's speed against the profile's fit runs, in trial order over the pair's runs: from a run's step
    traces when it keeps them, else from its speeds.json (`harness.fidelity_suite.speeds`); None when a run has
    neither (a trimmed fixture of an earlier suite)."""
    from harness.fidelity_suite.speeds import run_speeds

    out: list[float | None] = []
    for run in dirs:
        speeds = run_speeds(run, engine, profile)
        if speeds is None:
            return None
        out += speeds
    return out


def _trial_speeds(dirs: list[Path], engine: str, profile: Path) -> list[float | None]:
    """The trial speeds the table prints: [] when a run has none or none is known (a profile without levels)."""
    speeds = _pair_speeds(dirs, engine, profile)
    return speeds if speeds is not None and _known(speeds) else []


def _known(speeds: list[float | None] | None) -> bool:
    return bool(speeds) and any(s is not None for s in speeds or [])


def _round_trials(dirs: list[Path], engine: str) -> dict[str, Any]:
    """The per-trial values of runs that each measured one trial of the same schedule (their requests.jsonl the
    same bytes), as one run's repeat block holds its trials'."""

    def requests(run: Path) -> bytes:
        try:
            return (run / "requests.jsonl").read_bytes()
        except OSError as exc:
            raise HarnessInputError(f"{run / 'requests.jsonl'}: cannot read ({exc.strerror or exc})") from None

    first = requests(dirs[0])
    for other in dirs[1:]:
        if requests(other) != first:
            raise HarnessInputError(f"{other}: its requests differ from {dirs[0]}'s: not a trial of the same schedule")
    merged: dict[str, Any] = {}
    for run in dirs:
        repeat = json.loads((run / "metrics.json").read_text(encoding="utf-8")).get("repeat") or {}
        for key, block in (repeat.get(engine) or {}).items():
            merged.setdefault(key, {"values": []})["values"] += block.get("values") or []
    return merged


def suite_table(
    suite: Suite,
    runs: Path,
    simulate: Simulate,
    seeds: int = 5,
    noise: bool = True,
    sensitivity: float | None = None,
) -> dict[str, Any]:
    pairs = [pair_entry(suite, pair, runs, simulate, seeds, noise, sensitivity) for pair in suite.pairs]
    summary = {}
    for metric in (r["metric"] for r in next((p["rows"] for p in pairs if p["rows"]), [])):
        errors = [
            (p["pair"], r["error"])
            for p in pairs
            for r in p["rows"]
            if r["metric"] == metric and r["error"] is not None
        ]
        if errors:
            worst = max(errors, key=lambda e: abs(e[1]))
            summary[metric] = {
                "median_abs_error": statistics.median(abs(e) for _, e in errors),
                "worst_error": worst[1],
                "worst_pair": worst[0],
                "pairs": len(errors),
            }
    counts = _counts(p["verdict"] for p in pairs)
    table = {
        "suite": suite.path.name,
        "targets": vars(suite.targets),
        "pairs": pairs,
        "summary": summary,
        "verdicts": counts,
        "target": suite_outcome(counts, suite.targets.pairs_to_hold),
    }
    if suite.tipping is not None:
        table["tipping_rule"] = {"elasticity": suite.tipping.elasticity, "sensitivity": suite.tipping.fraction}
    if suite.at_trial_speed:
        at = _counts(p["at_trial_speed"]["verdict"] for p in pairs)
        table["at_trial_speed_verdicts"] = at
        table["at_trial_speed_target"] = suite_outcome(at, suite.targets.pairs_to_hold)
        if suite.at_trial_speed_shapes != "all":  # "all" is not written: every table before the option is unchanged
            table["at_trial_speed_shapes"] = suite.at_trial_speed_shapes
    return table


def _counts(verdicts: Iterable[str]) -> dict[str, int]:
    seen = list(verdicts)
    return {v: seen.count(v) for v in ("holds", "fails", "cannot_tell")}


_ON_SHAPES = " (on the shapes it was measured on)"  # `[judge] at_trial_speed_shapes = "measured"`
_SHORT = {"holds": "holds", "fails": "FAILS", "cannot_tell": "cannot tell"}


def format_table(table: dict[str, Any]) -> str:
    t = table["targets"]
    metrics = list(table["summary"])
    lines = [
        f"fidelity suite {table['suite']}: {len(table['pairs'])} pairs, every one reported; targets: medians and "
        f"throughput within {t['median_tolerance']:.0%}, p99s within {t['p99_tolerance']:.0%} or the real "
        "run's trial spread",
        f"{'pair':<26}" + "".join(f"{m:>14}" for m in metrics) + f"{'verdict':>13}",
    ]
    for p in table["pairs"]:
        if not p["rows"]:
            lines.append(f"{p['pair']:<26}{p.get('missing', 'no rows')}")
            continue
        by = {r["metric"]: r for r in p["rows"]}
        cells = [_cell(by.get(m)) for m in metrics]
        lines.append(f"{p['pair']:<26}" + "".join(f"{c:>14}" for c in cells) + f"{_SHORT[p['verdict']]:>13}")
        spread = [
            f"{by[m]['trials_spread']:.0%}" if by.get(m) and by[m]["trials_spread"] is not None else "-"
            for m in metrics
        ]
        lines.append(f"{'  real trials +-':<26}" + "".join(f"{s:>14}" for s in spread))
        if p.get("trial_speeds"):
            each = ", ".join("-" if v is None else f"{v:+.1%}" for v in p["trial_speeds"])
            lines.append(f"  trial speeds against the fit runs (> 0: slower): {each}")
        lines += _at_speed_lines(p, metrics)
        if "sensitivity" in p:
            lines.append(
                f"  sensitivity x(1+-{p['sensitivity']['fraction']:g}): {_sensitivity_cells(p['sensitivity'])}"
            )
        tipped = [f"{r['metric']} cannot tell, {r['why']}" for r in p["rows"] if "why" in r]
        if tipped:
            lines.append(f"  tipping rule: {'; '.join(tipped)}")
    if metrics:
        lines.append(
            f"{'median |error|':<26}" + "".join(f"{table['summary'][m]['median_abs_error']:>14.1%}" for m in metrics)
        )
        lines.append(f"{'worst error':<26}" + "".join(f"{table['summary'][m]['worst_error']:>+14.1%}" for m in metrics))
    for m in metrics:
        lines.append(f"  worst {m}: {table['summary'][m]['worst_pair']}")
    for p in table["pairs"]:
        if p.get("range"):
            lines.append(f"RANGE: {p['pair']}: {p['range']}")
    v = table["verdicts"]
    missing = sum("missing" in p for p in table["pairs"])
    unmeasured = f" ({missing} not measured)" if missing else ""
    lines.append(
        f"pairs: {v['holds']} hold, {v['fails']} fail, {v['cannot_tell']} cannot tell{unmeasured} (target: "
        f"{t['pairs_to_hold']} of {len(table['pairs'])} hold): target "
        f"{table['target']}"
    )
    measured = table.get("at_trial_speed_shapes") == "measured"
    if "at_trial_speed_verdicts" in table:
        a = table["at_trial_speed_verdicts"]
        lines.append(
            f"at each trial's measured speed{_ON_SHAPES if measured else ''}: {a['holds']} hold, {a['fails']} fail, "
            f"{a['cannot_tell']} cannot tell "
            f"(target: {t['pairs_to_hold']} of {len(table['pairs'])} hold): target {table['at_trial_speed_target']}"
        )
    lines.append(
        "cell: the twin's error (x: outside its target; ?: the real run cannot tell); "
        "+-: the furthest of the real run's trials from their median"
    )
    if "at_trial_speed_verdicts" in table:
        lines.append(
            "at trial speed: each trial against twins priced at that trial's own measured speed (step_scale = 1 + "
            "speed), the median of the trials' errors, +- the furthest from it; conditional on the speed measured "
            "from the real trial itself, so reported beside the plain verdict, never instead of it"
        )
    if measured:
        lines.append(
            'at trial speed on the measured shapes ([judge] at_trial_speed_shapes = "measured"): the speed scales '
            "only the steps of the shapes it was measured on (the fit runs' shape levels); every other step is at "
            "the profile's plain price"
        )
    tipping = next((p["sensitivity"]["threshold"] for p in table["pairs"] if "sensitivity" in p), None)
    rule = table.get("tipping_rule")
    if rule is not None:
        lines.append(
            f"tipping rule (registered: [judge] tipping_elasticity = {rule['elasticity']:g}, sensitivity = "
            f"{rule['sensitivity']:g}): a latency whose twins' elasticity to the step price at "
            f"x(1-+{rule['sensitivity']:g}) is above {rule['elasticity']:g} cannot tell in both verdicts, whatever its "
            "error: a price error within the machine's moment moves it beyond its tolerance"
        )
    elif tipping is not None:
        lines.append(
            "sensitivity: each latency's elasticity to the step price (the same twins at x(1-F) and x(1+F); 1: in "
            f"proportion); above {tipping:g} a metric is on a tipping point, where its error measures the tipping "
            "point, not the simulator; reported, never judged"
        )
    return "\n".join(lines)


def _at_speed_lines(pair: dict[str, Any], metrics: list[str]) -> list[str]:
    """A pair's at-speed cells and verdict, or why it cannot tell (none without the at-speed verdict)."""
    at = pair.get("at_trial_speed")
    if at is None:
        return []
    if not at["rows"]:
        return [f"{'  at trial speed':<26}cannot tell: {at.get('why', 'no rows')}"]
    by = {r["metric"]: r for r in at["rows"]}
    cells = [_cell(by.get(m)) for m in metrics]
    return [f"{'  at trial speed':<26}" + "".join(f"{c:>14}" for c in cells) + f"{_SHORT[at['verdict']]:>13}"]


def _sensitivity_cells(block: dict[str, Any]) -> str:
    """Each latency's elasticity to the step price, then the ones on a tipping point."""
    from harness.metrics.sensitivity import elasticity_cells

    tipping = [m["metric"] for m in block["metrics"] if m["tipping"]]
    return elasticity_cells(block) + (f"; on a tipping point: {', '.join(tipping)}" if tipping else "")


def _cell(row: dict[str, Any] | None) -> str:
    if row is None or row["error"] is None:
        return "-"
    mark = {"holds": "", "fails": " x", "cannot_tell": " ?"}[row["verdict"]]
    return f"{row['error']:+.1%}{mark}"
