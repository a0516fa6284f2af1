# Version 2 of docs/peers/agreement-protocol.md, sourced by `VERSION=2 docs/peers/agreement.sh OUT_DIR PEERS_DIR`
# (which takes /tmp/batchmark-timing.lock for the whole bench before it sources nothing else, and uses its peer_*,
# ours, theirs and load). Settings (the protocol's values as defaults):
#   V2_ROUNDS=30  QUIET_LOAD5=1.0  QUIET_WAIT_S=900  WARMUP_MIN_S=120  WARMUP_MAX_RUNS=12  SETTLE_S=5
#   V2_PEERS="vllm guidellm aiperf inference_perf" (a subset runs the same rules for fewer peers)
# Writes OUT_DIR/warmup/NN/ (batchmark's warm-up runs) and warmup/rates.txt, OUT_DIR/runs/NNN-WHO/ (every measured
# run in order: WHO is batchmark or the peer; each with load.txt and cpu.txt), OUT_DIR/quiet.txt.
V2_ROUNDS=${V2_ROUNDS:-30}; QUIET_LOAD5=${QUIET_LOAD5:-1.0}; QUIET_WAIT_S=${QUIET_WAIT_S:-900}
WARMUP_MIN_S=${WARMUP_MIN_S:-120}; WARMUP_MAX_RUNS=${WARMUP_MAX_RUNS:-12}; SETTLE_S=${SETTLE_S:-5}
# An array of its own name: bash exports no array, so making V2_PEERS one would drop the subset at the exec that
# takes the lock (agreement.sh), and every peer would run.
PEER_ORDER=(${V2_PEERS:-vllm guidellm aiperf inference_perf})

quiet_start() {  # before the server starts: the 5-minute load average down to QUIET_LOAD5, or QUIET_WAIT_S spent
  local waited=0
  until awk -v q="$QUIET_LOAD5" '{exit !($2 <= q)}' /proc/loadavg || ((waited >= QUIET_WAIT_S)); do
    sleep 15; waited=$((waited + 15))
  done
  echo "$(date -u +%T) after ${waited}s: $(cat /proc/loadavg) (quiet means 5-minute load <= $QUIET_LOAD5)" \
    >> "$OUT/quiet.txt"
}

cpu_stamp() {  # the CPU lines of /proc/stat and the server's CPU and run-queue wait ns (all its processes' threads)
  local pids="$SERVE $(pgrep -P "$SERVE" | tr '\n' ' ')"
  { echo "$1 $(date -u +%T.%N | cut -c1-12) $(grep '^cpu' /proc/stat | tr '\n' '|')"
    echo "$1 server $(for p in $pids; do cat /proc/"$p"/task/*/schedstat; done 2>/dev/null \
      | awk '{c += $1; w += $2} END {printf "%.0f %.0f\n", c, w}')"; } >> "$D/cpu.txt"
}

rate_of() {  # batchmark's whole-run output tok/s of the run in $1
  "$PY" -c 'import json, sys; m = json.load(open(sys.argv[1]))
print(m["engines"]["http"]["throughput"]["whole_run"]["output_token_rate"])' "$1/batchmark/metrics.json"
}

steady() {  # the last three warm-up rates within 5% of their median
  "$PY" -c 'import statistics, sys; v = [float(x) for x in sys.argv[1:]]; m = statistics.median(v)
sys.exit(0 if len(v) == 3 and all(abs(x / m - 1) <= 0.05 for x in v) else 1)' "$@"
}

warm_up() {  # batchmark's runs until WARMUP_MIN_S have passed and the last three agree, or WARMUP_MAX_RUNS
  local i=0 start=$SECONDS rates=()
  while :; do
    i=$((i + 1)); D="$OUT/warmup/$(printf %02d $i)"; mkdir -p "$D"; ours
    rates+=("$(rate_of "$D" || echo 0)"); echo "${rates[-1]}" >> "$OUT/warmup/rates.txt"
    if ((SECONDS - start >= WARMUP_MIN_S)) && ((i >= 3)) && steady "${rates[@]: -3}"; then
      echo "steady after $i runs, $((SECONDS - start)) s" >> "$OUT/warmup/rates.txt"; return
    fi
    if ((i >= WARMUP_MAX_RUNS)); then
      echo "NOT steady after $i runs, $((SECONDS - start)) s" >> "$OUT/warmup/rates.txt"; return
    fi
  done
}

measured() {  # the next measured run: $1 is batchmark or a peer
  SEQ=$((SEQ + 1)); D="$OUT/runs/$(printf %03d $SEQ)-$1"; mkdir -p "$D"
  cpu_stamp start
  if [ "$1" = batchmark ]; then ours; else
    theirs "$1"
    [ -f "$D/${FILE[$1]}" ] && "$PY" -m harness.cli import "$D/${FILE[$1]}" --out "$D/peer-imported" \
      > "$D/import.log" 2>&1
  fi
  cpu_stamp end
  sleep "$SETTLE_S"
}

bench_v2() {  # warm-up, then per round batchmark and each peer in turn (B P B P ...), the peers' order rotating
  local r k peer
  warm_up
  SEQ=0; measured batchmark
  for r in $(seq 1 "$V2_ROUNDS"); do
    for k in "${!PEER_ORDER[@]}"; do
      peer=${PEER_ORDER[$(((r - 1 + k) % ${#PEER_ORDER[@]}))]}
      if [ ! -d "$PEERS/${VENV[$peer]}" ]; then echo "no $PEERS/${VENV[$peer]}: $peer skipped"; continue; fi
      measured "$peer"; measured batchmark
    done
    echo "$(date -u +%T) round $r done: $(cat /proc/loadavg)"
  done
}
