"""Issue 30: one fidelity cell split by request and by step (docs/measurements/2026-12-07-fidelity-v6-cells.md).

For a metric (ttft, tpot or e2e) of a real run and its twins (`batchmark sim fidelity RUN --twin-dir DIR`, with
and without `--no-noise`), prints
  - the cell: the percentile per real trial and per twin seed, their medians, the error;
  - per request (matched by id): the real trials' median value, the noisy twins' median, the noise-free twin's,
    and the requests whose rank lies at the percentile;
  - per request, the metric's interval split into steps (the steps' time inside it), gaps between steps and
    idle time, each priced three ways: as measured (real) or as drawn (twin), at the profile's noise-free price,
    and the step count;
  - a re-timing of each REAL trial's own schedule (same steps, same order): every step at the profile's
    noise-free price, then every step at the price times the twin seeds' mean drawn ratio of its bin, the gaps
    kept as measured or set to the profile's mean gap; and as measured but for the WARM steps after each idle
    pause, set to the price times the trial's own settled median ratio of their shape (docs/plans/pricing_split.py's
    bins; a step whose shape never ran settled keeps its time): what the warm-up
    after an idle pause costs (CELL_WARM and CELL_SETTLED set the two step counts). Each re-timed cell against the
    real one is that price's share of the error with the schedule held fixed.
Reads files only.

    .venv/bin/python docs/plans/cell_split.py METRIC PERCENTILE PROFILE RUN TWIN_DIR NO_NOISE_TWIN_DIR [ENGINE]
"""

from __future__ import annotations

import json
import os
import statistics
import sys
from pathlib import Path

import numpy as np

from docs.plans.pricing_split import shape
from engines.sim.fitted import FittedCost, load_profile, regressors
from harness.simulation import trace_steps

IDLE_S = 0.005  # a pause between steps longer than this is the engine waiting for work, not its loop
WARM = int(
    os.environ.get("CELL_WARM", "3")
)  # steps after an idle pause that run slower than the engine settled (measured: 1.05-1.17 of the price)
SETTLED = int(
    os.environ.get("CELL_SETTLED", "8")
)  # steps after an idle pause from which the engine is taken as settled


def records(run: Path, engine: str) -> dict[int, dict[str, dict]]:
    """trial -> request id -> record, for one engine."""
    out: dict[int, dict[str, dict]] = {}
    with (run / "records.jsonl").open() as f:
        for line in f:
            r = json.loads(line)
            if r["engine"] == engine and not r.get("error_type"):
                out.setdefault(int(r["trial"]), {})[r["request_id"]] = r
    return out


def value(r: dict, metric: str, times: list[float] | None = None) -> float:
    tokens = times if times is not None else r["token_times"]
    if metric == "ttft":
        return tokens[0] - r["t_scheduled"]
    if metric == "e2e":
        return tokens[-1] - r["t_scheduled"]
    return (tokens[-1] - tokens[0]) / (len(tokens) - 1) if len(tokens) > 1 else float("nan")


def interval(r: dict, metric: str) -> tuple[float, float]:
    start = r["token_times"][0] if metric == "tpot" else r["t_scheduled"]
    end = r["token_times"][0] if metric == "ttft" else r["token_times"][-1]
    return start, end


def steps(path: Path, profile: FittedCost) -> tuple[list[dict], np.ndarray]:
    rows = [json.loads(line) for line in path.open()]
    trace = trace_steps([path])
    coef = np.array([profile.coefficients.get(n, 0.0) for n in profile.regressors])
    return rows, profile.intercept_s + regressors(trace.features, profile.version) @ coef


def split(r: dict, metric: str, rows: list[dict], price: np.ndarray) -> tuple[float, float, float, float, int]:
    """The metric's interval: (step time, its noise-free price, gaps, idle, steps), each step prorated by its
    overlap with the interval."""
    start, end = interval(r, metric)
    busy = priced = gaps = idle = 0.0
    n = 0
    for i, row in enumerate(rows):
        a, b = row["t_start"], row["t_end"]
        overlap = min(b, end) - max(a, start)
        if overlap > 0:
            busy += overlap
            priced += price[i] * overlap / (b - a)
            n += 1
        if i + 1 < len(rows):
            g0, g1 = b, rows[i + 1]["t_start"]
            gap = min(g1, end) - max(g0, start)
            if gap > 0:
                if g1 - g0 > IDLE_S:
                    idle += gap
                else:
                    gaps += gap
    return busy, priced, gaps, idle, n


def since_idle(rows: list[dict]) -> np.ndarray:
    """Per step, how many steps ran since the engine last sat idle (0: the first step after an idle pause)."""
    out, k = [], 0
    for i, row in enumerate(rows):
        k = 0 if i == 0 or row["t_start"] - rows[i - 1]["t_end"] > IDLE_S else k + 1
        out.append(k)
    return np.asarray(out)


def retime(rows: list[dict], durations: np.ndarray, gap: float | None) -> dict[float, float]:
    """The real trial's schedule with other step durations: old t_end -> new t_end. A long pause (the engine
    idle until an arrival) ends where it ended; a short one is kept, or set to `gap`."""
    out: dict[float, float] = {}
    clock = rows[0]["t_start"]
    for i, row in enumerate(rows):
        if i:
            pause = row["t_start"] - rows[i - 1]["t_end"]
            clock = max(clock, row["t_start"]) if pause > IDLE_S else clock + (pause if gap is None else gap)
        clock += float(durations[i])
        out[row["t_end"]] = clock
    return out


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile([v for v in values if v == v], q))


def drawn_ratios(twin: Path, engine: str, profile: FittedCost) -> tuple[list[float], list[np.ndarray]]:
    """Per bin of predicted size, the ratios drawn / noise-free price over every twin seed's steps."""
    edges = list(profile.noise.get("step_bin_edges_s") or [])
    per_bin: list[list[float]] = [[] for _ in range(len(edges) + 1)]
    for path in sorted((twin / "steps").glob(f"{engine}-t*.jsonl")):
        rows, price = steps(path, profile)
        for row, p in zip(rows, price, strict=True):
            per_bin[int(np.searchsorted(edges, p, side="right"))].append((row["t_end"] - row["t_start"]) / p)
    return edges, [np.asarray(b) for b in per_bin]


def main(metric: str, q: float, profile_path: Path, run: Path, twin: Path, twin0: Path, engine: str) -> None:
    profile = load_profile(profile_path)
    real, sims, sim0 = records(run, engine), records(twin, f"sim-{engine}"), records(twin0, f"sim-{engine}")
    cell_real = [percentile([value(r, metric) for r in t.values()], q) for t in real.values()]
    cell_sim = [percentile([value(r, metric) for r in t.values()], q) for t in sims.values()]
    cell_sim0 = [percentile([value(r, metric) for r in t.values()], q) for t in sim0.values()]
    med_real = statistics.median(cell_real)
    print(
        f"{metric} p{q:g}, ms: real trials {' '.join(f'{1e3 * v:.2f}' for v in cell_real)}, median "
        f"{1e3 * med_real:.2f}; twin seeds {' '.join(f'{1e3 * v:.2f}' for v in cell_sim)}, median "
        f"{1e3 * statistics.median(cell_sim):.2f} ({100 * (statistics.median(cell_sim) / med_real - 1):+.1f}%); "
        f"noise-free twin {1e3 * cell_sim0[0]:.2f} ({100 * (cell_sim0[0] / med_real - 1):+.1f}%)"
    )
    ids = sorted(set.intersection(*(set(t) for t in [*real.values(), *sims.values()])))
    med = {i: statistics.median(value(t[i], metric) for t in real.values()) for i in ids}
    order = sorted((i for i in ids if med[i] == med[i]), key=med.get)
    at = round(q / 100 * (len(order) - 1))
    near = set(order[max(0, at - 2) : at + 3])
    real_steps = {t: steps(run / "steps" / f"{engine}-t{t}.jsonl", profile) for t in real}
    sim_steps = {s: steps(twin / "steps" / f"sim-{engine}-t{s}.jsonl", profile) for s in sims}
    print(
        f"{len(order)} requests, rank {at} at p{q:g}; per request (ms; medians over trials / seeds): "
        "real, twin, noise-free twin, error | interval split, real then twin: steps' time (priced noise-free) "
        "+ gaps + idle, steps"
    )
    for rank, i in enumerate(order):
        rs = [split(real[t][i], metric, *real_steps[t]) for t in real]
        ss = [split(sims[s][i], metric, *sim_steps[s]) for s in sims]
        r0 = [value(t[i], metric) for t in sim0.values()]
        sm = statistics.median(value(t[i], metric) for t in sims.values())

        def parts(xs: list[tuple[float, float, float, float, int]]) -> str:
            m = [statistics.median(x[k] for x in xs) for k in range(5)]
            return f"{1e3 * m[0]:7.1f} ({1e3 * m[1]:7.1f}) + {1e3 * m[2]:5.1f} + {1e3 * m[3]:6.1f}, {m[4]:4.0f}"

        mark = "*" if i in near else " "
        print(
            f"{mark}{rank:3d} {i} {1e3 * med[i]:8.2f} {1e3 * sm:8.2f} {1e3 * statistics.median(r0):8.2f} "
            f"{100 * (sm / med[i] - 1):+6.1f}% | {parts(rs)} | {parts(ss)}"
        )
    edges, drawn = drawn_ratios(twin, f"sim-{engine}", profile)
    print(
        "twin seeds' drawn ratio (step / noise-free price) per bin of price, median / mean (steps): "
        + ", ".join(f"<{1e3 * e:.1f} ms" if k < len(edges) else "rest" for k, e in enumerate([*edges, 0]))
        + ": "
        + " ".join(f"{np.median(d):.3f} / {np.mean(d):.3f} ({d.size})" if d.size else "-" for d in drawn)
    )
    for label, kind, gap in (
        ("measured", "measured", None),
        ("noise-free price, measured gaps", "free", None),
        ("noise-free price, mean gap", "free", profile.step_gap_s),
        ("price x drawn bin mean ratio, measured gaps", "drawn", None),
        (
            f"measured, the first {WARM} steps after an idle pause at the trial's settled ratio of their shape",
            "settled",
            None,
        ),
    ):
        cells = []
        for t, trial in real.items():
            rows, price = real_steps[t]
            measured = np.array([r["t_end"] - r["t_start"] for r in rows])
            bins = np.searchsorted(edges, price, side="right")
            if kind == "measured":
                durations = measured
            elif kind == "free":
                durations = price
            elif kind == "drawn":
                durations = price * np.array([np.mean(drawn[b]) if drawn[b].size else 1.0 for b in bins])
            else:
                since = since_idle(rows)
                ratio = measured / price
                keys = [shape(f) for f in trace_steps([run / "steps" / f"{engine}-t{t}.jsonl"]).features]
                settled = {}
                for k, r, n in zip(keys, ratio, since, strict=True):
                    if n >= SETTLED:
                        settled.setdefault(k, []).append(r)
                durations = np.array(
                    [
                        p * np.median(settled[k]) if n < WARM and k in settled else m
                        for k, p, m, n in zip(keys, price, measured, since, strict=True)
                    ]
                )
            new = retime(rows, durations, gap)
            cells.append(percentile([value(r, metric, [new[x] for x in r["token_times"]]) for r in trial.values()], q))
        m = statistics.median(cells)
        print(
            f"real schedules re-timed, {label}: {' '.join(f'{1e3 * c:.2f}' for c in cells)}, median "
            f"{1e3 * m:.2f} ({100 * (m / med_real - 1):+.1f}%)"
        )


if __name__ == "__main__":
    a = sys.argv[1:]
    main(a[0], float(a[1]), Path(a[2]), Path(a[3]), Path(a[4]), Path(a[5]), a[6] if len(a) > 6 else "continuous")
