#!/bin/bash
# phases_pairs.sh BASE_TREE NEW_TREE [ROUNDS]: phases.py of two checkouts in ROUNDS pairs (default 5), base and new
# of a round in one exclusive hold of the timing lock, the first alternating; one PHASES line a run on stdout.
# SHIM: the folder of the sitecustomize.py that points the editable install at BATCHMARK_TREE.
set -eu
base=$1 new=$2 rounds=${3:-5}
SHIM=${SHIM:?set SHIM to the sitecustomize folder}
P=$(cd "$(dirname "$0")" && pwd)/phases.py
PY=${PYTHON:-$(cd "$(dirname "$0")/../../.." && pwd)/.venv/bin/python}  # PYTHON: another interpreter
out=$(mktemp -d)
for i in $(seq 1 "$rounds"); do
  order="base new"; [ $((i % 2)) -eq 0 ] && order="new base"
  script=""
  for t in $order; do
    tree=$base; [ "$t" = new ] && tree=$new
    script+="cd $tree; echo -n \"$i $t \$(date -u +%H:%M:%S) load \$(cut -d' ' -f1 /proc/loadavg) \"; PYTHONPATH=$SHIM:$tree BATCHMARK_TREE=$tree $PY $P run --workload azure-conv --engine sim:model=llama-3.1-8b,hardware=h100 --no-progress --out $out/ph-$t-$i 2>&1 >/dev/null | grep PHASES; rm -rf $out/ph-$t-$i; "
  done
  flock /tmp/batchmark-timing.lock bash -c "$script"
done
rmdir "$out"
