#!/bin/bash
# phases_pairs.sh: phases.py of /tmp/speed9_base and of this worktree in 5 pairs, base and new of a round in one
# exclusive hold of the timing lock, the first alternating; one PHASES line a run on stdout
P=/work/wt/f35s9/docs/plans/sim_run_speed/phases.py
for i in 1 2 3 4 5; do
  order="base new"; [ $((i % 2)) -eq 0 ] && order="new base"
  script=""
  for t in $order; do
    tree=/tmp/speed9_base; [ $t = new ] && tree=/work/wt/f35s9
    script+="cd $tree; echo -n \"$i $t \$(date -u +%H:%M:%S) load \$(cut -d' ' -f1 /proc/loadavg) \"; PYTHONPATH=/work/wt/shim:$tree BATCHMARK_TREE=$tree /work/main/.venv/bin/python $P run --workload azure-conv --engine sim:model=llama-3.1-8b,hardware=h100 --no-progress --out /tmp/s9/ph-$t-$i 2>&1 >/dev/null | grep PHASES; rm -rf /tmp/s9/ph-$t-$i; "
  done
  flock /tmp/batchmark-timing.lock bash -c "$script"
done
