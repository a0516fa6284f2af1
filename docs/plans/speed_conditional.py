"""Issue 30, exploratory: a suite's pairs judged with each twin at its own real trial's speed. For every pair of an
interleaved suite measured with step traces (its RUNS directory, not the trimmed fixture), each round's trial gets
its speed against the fit runs (`harness.simulation.trial_speeds`, on profiles refitted here on the suite's fit
runs so that they keep their shape levels: the same fit, the same prices and noise), and five seeded twins at
`step_scale = 1 + speed`. Per metric, each trial's error (its twins' median against that trial) and the pair's
median error over its trials are printed, beside the plain twins' error (scale 1) computed the same way. The
count at the end applies the suite's tolerances to the median errors with no allowance for spread: a preview of a
verdict a later suite would register, not a verdict. Reads files only.

    .venv/bin/python docs/plans/speed_conditional.py SUITE.toml RUNS_DIR
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

from harness.cli.sim import simulate_twin
from harness.fidelity_suite.spec import load_suite
from harness.metrics.simulation import fidelity_rows
from harness.simulation import fit_run, run_engines, trial_speeds

SEEDS = 5
P99 = ("TTFT p99", "TPOT p99", "E2E p99")


def trial_errors(run: Path, engine: dict, profile: Path, scale: float) -> dict[str, float | None]:
    real = json.loads((run / "metrics.json").read_text())["engines"][engine["name"]]
    twins = [simulate_twin(run, engine, profile, seed=s, headline=True, step_scale=scale) for s in range(SEEDS)]
    return {row["metric"]: row["error"] for row in fidelity_rows(real, *twins)}


def main(suite_path: Path, runs: Path) -> None:
    suite = load_suite(suite_path)
    fits = [runs / name for name in suite.fit_names]
    refitted = {}
    for name, profile in suite.profiles.items():
        path = Path(f"/tmp/speed_conditional-{suite_path.parent.name}-{name}.json")
        fit_run(fits, [profile.engine]).save(path)
        refitted[name] = path
    t = suite.targets
    holds = {"plain": 0, "at speed": 0}
    for pair in suite.pairs:
        dirs = [runs / name for name in suite.pair_runs(pair)]
        engine = next(e for e in run_engines(dirs[0]) if e.get("kind") in ("static", "continuous"))
        profile = refitted[pair.profile]
        from engines.sim.fitted import load_profile

        speeds = [trial_speeds(d, engine["name"], load_profile(profile))[0]["speed"] for d in dirs]
        plain = [trial_errors(d, engine, profile, 1.0) for d in dirs]
        at_speed = [trial_errors(d, engine, profile, 1.0 + s) for d, s in zip(dirs, speeds, strict=True)]
        print(f"{pair.name}: trial speeds {', '.join(f'{s:+.1%}' for s in speeds)}")
        for label, table in (("plain", plain), ("at speed", at_speed)):
            cells, ok = [], True
            for metric in table[0]:
                errors = [e[metric] for e in table if e[metric] is not None]
                if not errors:
                    cells.append(f"{metric} -")
                    ok = False
                    continue
                median = statistics.median(errors)
                tolerance = t.p99_tolerance if metric in P99 else t.median_tolerance
                ok &= abs(median) <= tolerance
                cells.append(f"{metric} {median:+.1%}{'' if abs(median) <= tolerance else ' x'}")
            holds[label] += ok
            print(f"  {label:<9}" + "; ".join(cells))
    print(f"pairs within every tolerance (median of per-trial errors, no spread allowance): {holds}")


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
