#!/bin/bash
# One round of test_ci_example's timing: for each tree root given (e.g. main's, then this branch's), the test
# function with that tree's test and code (ci_test_verdict.py). Run it under `flock /tmp/batchmark-timing.lock`.
script="$(cd "$(dirname "$0")" && pwd)/ci_test_verdict.py"
for root in "$@"; do
  cd "$root" || exit 1
  uptime | sed 's/.*load/load/'
  PYTHONPATH=$root /work/main/.venv/bin/python "$script" 2>&1 >/dev/null | grep -v "^ *!\|^$" | sed "s|^|$(basename "$root") |"
done
