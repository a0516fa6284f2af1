#!/bin/bash
# usage: identity_runs.sh CODE_ROOT OUT: a simulated run and a torch run (two engines) with CODE_ROOT's code
set -e
cd "$1"
export PYTHONPATH="$1"
PY=/work/main/.venv/bin/python
$PY -m harness.cli run --workload chat-small --requests 24 --rate 8 --seed 1 --engine sim --no-report --no-progress --out "$2/sim" >/dev/null
$PY -m harness.cli run --workload chat-small --requests 16 --rate 1000 --seed 1 --threads 1 --engine continuous --engine static --no-report --no-progress --out "$2/torch" >/dev/null
