#!/bin/bash
# smallrounds.sh NAME ROUNDS: as rounds3.sh, but a small simulated run (chat-small, 8 requests: mostly imports,
# metrics and the report).
# Trees: git worktree add --detach /work/wt/f35fast-base 73a073a; ... /work/wt/f35fast-time 0d951e6;
# ... /work/wt/f35fast-time2 efb28b3. Table: python docs/plans/sim_run_speed/table.py /tmp/f35fast/NAME/rounds.txt
name=$1; rounds=$2; dir=/tmp/f35fast/$name; mkdir -p $dir
declare -A TREE=([base]=/work/wt/f35fast-base [imports]=/work/wt/f35fast-time [cache]=/work/wt/f35fast-time2)
for i in $(seq 1 $rounds); do
  for t in base imports cache; do
    rm -rf $dir/$t-$i; mkdir -p $dir/$t-$i; cd ${TREE[$t]}
    flock /tmp/batchmark-timing.lock bash -c "echo -n \"round $i $t \$(date -u +%H:%M:%S) load_before \$(cut -d' ' -f1 /proc/loadavg) \"; /usr/bin/time -f '%e s wall %U s user %S s sys' -o $dir/$t-$i/time.txt /work/main/.venv/bin/python -m harness.cli run --workload chat-small --requests 8 --engine sim --no-progress --out $dir/$t-$i/out > $dir/$t-$i/log.txt 2>&1; echo \"\$(cat $dir/$t-$i/time.txt) load_after \$(cut -d' ' -f1 /proc/loadavg)\"" >> $dir/rounds.txt
    true
  done
done
echo done >> $dir/rounds.txt
