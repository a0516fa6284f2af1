#!/bin/bash
# One round: the sweep gate test for each tree root given, then the plugin subprocess test's pytest with and
# without hypothesis's plugin (test_theirs.py in /tmp/gf2_plug). Run it under the timing lock.
for root in "$@"; do
  cd $root; l=$(uptime | sed 's/.*load average: //')
  s=$(date +%s.%N)
  PYTHONPATH=$root /work/main/.venv/bin/python -m pytest -q -p no:cacheprovider --import-mode=append "tests/gate/test_gate_sweep.py::test_sweep_on_the_embedded_model_finds_continuous_capacity_above_static" 2>&1 | tail -1 | tr -d '\n'
  echo " sweep $(basename $root) $(echo "$(date +%s.%N) - $s" | bc) s load $l"
done
cd /tmp/gf2_plug
for flag in "" "-p no:hypothesispytest"; do
  l=$(uptime | sed 's/.*load average: //'); s=$(date +%s.%N)
  PYTHONPATH=/work/wt/gatefast2 /work/main/.venv/bin/python -m pytest -q -p no:cacheprovider $flag test_theirs.py | tail -1 | tr -d '\n'
  echo " plugin-subprocess [$flag] $(echo "$(date +%s.%N) - $s" | bc) s load $l"
done
