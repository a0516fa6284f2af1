#!/bin/bash
# rounds.sh NAME ROUNDS "TREE ..." RUN-ARGS...: interleaved rounds of `batchmark run RUN-ARGS` in each tree in turn
# (base: main 73a073a; imports: 0d951e6; cache: efb28b3), each run a fresh process under the exclusive timing lock,
# taken per run; one line per run in /tmp/f35fast/NAME/rounds.txt: round, tree, UTC start, load average (1 min)
# before, wall, user, sys, load after. Each run's directory is kept, its step trace only in round 1.
# Trees: git worktree add --detach /work/wt/f35fast-base 73a073a; ... /work/wt/f35fast-time 0d951e6;
# ... /work/wt/f35fast-time2 efb28b3. Table: python docs/plans/sim_run_speed/table.py /tmp/f35fast/NAME/rounds.txt
# A tree may also be given as LABEL=DIR or LABEL=DIR:PYCACHE: that directory, with PYTHONPYCACHEPREFIX=PYCACHE
# (bytecode compiled beforehand by `python -m compileall` under the same prefix: a venv installed with bytecode).
name=$1; rounds=$2; order=$3; shift 3; dir=/tmp/f35fast/$name; mkdir -p $dir
declare -A TREE=([base]=/work/wt/f35fast-base [imports]=/work/wt/f35fast-time [cache]=/work/wt/f35fast-time2)
for i in $(seq 1 $rounds); do
  for spec in $order; do
    t=${spec%%=*}; tree=${TREE[$t]}; pyc=
    if [[ $spec == *=* ]]; then tree=${spec#*=}; [[ $tree == *:* ]] && pyc=${tree#*:} && tree=${tree%%:*}; fi
    rm -rf $dir/$t-$i; mkdir -p $dir/$t-$i; cd $tree
    PYTHONPYCACHEPREFIX=$pyc flock /tmp/batchmark-timing.lock bash -c "[ -z \"\$PYTHONPYCACHEPREFIX\" ] && unset PYTHONPYCACHEPREFIX; echo -n \"round $i $t \$(date -u +%H:%M:%S) load_before \$(cut -d' ' -f1 /proc/loadavg) \"; /usr/bin/time -f '%e s wall %U s user %S s sys' -o $dir/$t-$i/time.txt /work/main/.venv/bin/python -m harness.cli run $* --no-progress --out $dir/$t-$i/out > $dir/$t-$i/log.txt 2>&1; echo \"\$(cat $dir/$t-$i/time.txt) load_after \$(cut -d' ' -f1 /proc/loadavg)\"" >> $dir/rounds.txt
    [ $i -gt 1 ] && rm -rf $dir/$t-$i/out/steps  # round 1's trace is kept for the identity check (same.sh)
  done
done
echo done >> $dir/rounds.txt
