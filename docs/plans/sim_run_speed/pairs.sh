#!/bin/bash
# pairs.sh NAME FIRST LAST BASE-TREE NEW-TREE RUN-ARGS...: rounds.sh's runs and line format (for table.py), but the
# two runs of a round in ONE exclusive hold of the timing lock (two runs of about 20 s: under the 4-minute
# limit), base first in odd rounds and new first in even ones. Each run imports its own tree's code (PYTHONPATH and
# BATCHMARK_TREE; SHIM=DIR first on the path where an editable install's finder must be rewritten: the installed
# finder would import the tree it was installed from). Shared holders can keep an exclusive waiter out for minutes,
# so a lock taken per run spreads a round's two runs far apart; taken per round they stay side by side.
# Lines go to /tmp/f35fast/NAME/rounds.txt; each run's directory is kept, its step trace only in round 1.
name=$1; first=$2; last=$3; declare -A TREE=([base]=$4 [new]=$5); shift 5; dir=/tmp/f35fast/$name; mkdir -p $dir
for i in $(seq $first $last); do
  order="base new"; [ $((i % 2)) -eq 0 ] && order="new base"
  script=""
  for t in $order; do
    rm -rf $dir/$t-$i; mkdir -p $dir/$t-$i
    script+="cd ${TREE[$t]}; echo -n \"round $i $t \$(date -u +%H:%M:%S) load_before \$(cut -d' ' -f1 /proc/loadavg) \"; PYTHONPATH=${SHIM:+$SHIM:}${TREE[$t]} BATCHMARK_TREE=${TREE[$t]} /usr/bin/time -f '%e s wall %U s user %S s sys' -o $dir/$t-$i/time.txt /work/main/.venv/bin/python -m harness.cli run $* --no-progress --out $dir/$t-$i/out > $dir/$t-$i/log.txt 2>&1; echo \"\$(cat $dir/$t-$i/time.txt) load_after \$(cut -d' ' -f1 /proc/loadavg)\"; "
  done
  flock /tmp/batchmark-timing.lock bash -c "$script" >> $dir/rounds.txt
  [ $i -gt 1 ] && rm -rf $dir/*-$i/out/steps  # round 1's traces are kept for the identity check (same.sh)
done
