#!/usr/bin/env bash
# Issue 30's twin-schedule diagnosis (docs/measurements/2026-12-06-twin-schedule-diagnosis.md): every figure of that
# log, from the third fidelity suite's full real runs (step traces and records; the fixture keeps neither) and its
# committed profiles. Simulation and fits only: nothing is timed (run it under `flock -s`).
#
#     flock -s /tmp/batchmark-timing.lock docs/plans/twin_schedule_diagnosis.sh RUNS OUT
#
# RUNS: the suite's full runs (/work/f30ctx-meas/v3/runs on the machine that measured them); OUT: a new directory.
set -euo pipefail
RUNS=$1
OUT=$2
PY=${PYTHON:-.venv/bin/python}
PROFILES=tests/fixtures/fidelity_suite_v3/runs
PAIRS="azure-code-continuous azure-code-static kv-pressure-preempt hol-blocking-continuous hol-blocking-static
chat-small-static-held hol-blocking-sjf noisy-neighbour-fair multi-turn-prefix"
mkdir -p "$OUT/oracle"
engine_of() { case $1 in *static*) echo static ;; *) echo continuous ;; esac; }

# 1. each pair's twins (5 seeds, as the suite runs them) written out, then compared with the real trials
for pair in $PAIRS; do
    engine=$(engine_of "$pair")
    "$PY" -m harness.cli sim fidelity "$RUNS/$pair" --profile "$PROFILES/profile-$engine.json" \
        --twin-dir "$OUT/twins/$pair" >"$OUT/fidelity-suite-profile-$pair.txt" 2>&1
    "$PY" docs/plans/twin_schedule_diff.py "$RUNS/$pair" "$PROFILES/profile-$engine.json" "$OUT/twins/$pair" \
        >"$OUT/diff-$pair.txt"
done

# 2. the real steps priced: per shape against the fit run's, and the pricing error split
"$PY" docs/plans/regime_prices.py "$PROFILES/profile-continuous.json" continuous "$RUNS/fit-step-profile-wide-s1" \
    "$RUNS/hol-blocking-sjf" "$RUNS/noisy-neighbour-fair" "$RUNS/multi-turn-prefix" >"$OUT/regimes-continuous.txt"
"$PY" docs/plans/regime_prices.py "$PROFILES/profile-static.json" static "$RUNS/fit-step-profile-wide-s1" \
    "$RUNS/azure-code-static" "$RUNS/hol-blocking-static" "$RUNS/chat-small-static-held" >"$OUT/regimes-static.txt"
"$PY" docs/plans/pricing_split.py "$PROFILES/profile-continuous.json" continuous "$RUNS/fit-step-profile-wide-s1" \
    "$RUNS/azure-code-continuous" "$RUNS/kv-pressure-preempt" "$RUNS/hol-blocking-continuous" \
    "$RUNS/hol-blocking-sjf" "$RUNS/noisy-neighbour-fair" "$RUNS/multi-turn-prefix" >"$OUT/split-continuous.txt"
"$PY" docs/plans/pricing_split.py "$PROFILES/profile-static.json" static "$RUNS/fit-step-profile-wide-s1" \
    "$RUNS/azure-code-static" "$RUNS/hol-blocking-static" "$RUNS/chat-small-static-held" >"$OUT/split-static.txt"

"$PY" docs/plans/shape_speed_windows.py "$PROFILES/profile-continuous.json" "$RUNS/fit-step-profile-wide-s1" \
    continuous 1 1 256 5 >"$OUT/windows-fit-continuous.txt"
"$PY" docs/plans/shape_speed_windows.py "$PROFILES/profile-static.json" "$RUNS/hol-blocking-static" static 2 4 \
    >"$OUT/windows-hol-blocking-static.txt"

# 3. counterfactual: the same twins priced by a profile fitted on the pair's own real steps (in sample)
# (azure-code-static cannot: its 6 prefills and 297 decode rows cannot separate the prices, `sim fit` says so)
for pair in hol-blocking-sjf noisy-neighbour-fair multi-turn-prefix kv-pressure-preempt hol-blocking-continuous \
    hol-blocking-static chat-small-static-held; do
    engine=$(engine_of "$pair")
    "$PY" -m harness.cli sim fit "$RUNS/$pair" --engine "$engine" -o "$OUT/oracle/$pair.json" >/dev/null
    "$PY" -m harness.cli sim fidelity "$RUNS/$pair" --profile "$OUT/oracle/$pair.json" \
        >"$OUT/fidelity-own-profile-$pair.txt" 2>&1
done

# 4. static: pad rows priced as prompt rows (one price), azure-code-static's twin on it
"$PY" docs/plans/static_tied_pad.py "$RUNS/fit-step-profile-wide-s1" "$PROFILES/profile-static.json" \
    "$OUT/oracle/static-tied.json" >"$OUT/static-tied.txt"
"$PY" docs/plans/regime_prices.py "$OUT/oracle/static-tied.json" static "$RUNS/fit-step-profile-wide-s1" \
    "$RUNS/azure-code-static" "$RUNS/hol-blocking-static" "$RUNS/chat-small-static-held" >"$OUT/regimes-static-tied.txt"
"$PY" -m harness.cli sim fidelity "$RUNS/azure-code-static" --profile "$OUT/oracle/static-tied.json" \
    >"$OUT/fidelity-tied-azure-code-static.txt" 2>&1
