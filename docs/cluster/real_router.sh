#!/usr/bin/env bash
# A real router over real replicas, and its simulated twin (docs/cluster.md "A real router").
#
#   make router-bench            # installs the optional extra `router` (vllm-router), then runs this under the lock
#   flock /tmp/batchmark-timing.lock bash docs/cluster/real_router.sh     # the same, vllm-router already installed
#
# 1. fits a step-time profile of the embedded model on this machine (an in-process continuous engine, one thread,
#    `batchmark serve`'s 2048-token step);
# 2. starts REPLICAS `batchmark serve --threads 1` replicas and, per policy, vllm-router in front of them;
# 3. CALIBRATION runs (the workload under another seed): in process, at one replica directly, and through the
#    router; `batchmark sim serving-path` measures on them the serving path (request by request, served against
#    in process) and the replicas' step contention, the cluster twin's two options (OUT/serving.json);
# 4. per policy, drives the router with `batchmark run --engine http:url=ROUTER,router=POLICY,replicas=N` (the
#    manifest records the fleet), prints the run's own split (`sim serving-path`), then judges its cluster twin
#    with `batchmark sim fidelity`, plain and with `--serving OUT/serving.json` (measured on the other run).
# Each replica writes its steps (`batchmark serve --step-trace`); each run keeps its share of them and of every
# replica's /metrics before and after it in RUN/replicas/ (harness/serving_path.py reads them).
# Not a test and not CI: it takes minutes and measures this machine. Everything it starts it stops on exit.
set -euo pipefail
cd "$(dirname "$0")/../.."

BM=${BM:-.venv/bin/batchmark}
ROUTER=${ROUTER:-.venv/bin/vllm-router}
OUT=${OUT:-runs/real-router}
POLICIES=${POLICIES:-round_robin power_of_two cache_aware}
REPLICAS=${REPLICAS:-2}
PORT=${PORT:-18400}  # the router; replica i listens on PORT + i
WORKLOAD=${WORKLOAD:-chat-small}
REQUESTS=${REQUESTS:-64}
RATE=${RATE:-}  # empty: the workload's own rate (chat-small: Poisson 2 req/s)
SEEDS=${SEEDS:-5}
CALIBRATION_SEED=${CALIBRATION_SEED:-1}  # the calibration run's schedule: not the judged runs' (chat-small: 0)

command -v "$ROUTER" >/dev/null || { echo "no vllm-router at $ROUTER: make router-bench installs it" >&2; exit 2; }
mkdir -p "$OUT"
STARTED=()
cleanup() { for pid in "${STARTED[@]}"; do kill "$pid" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT
load() { echo "load average ($1): $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$OUT/loadavg.txt"; }
wait_http() {  # URL, seconds
    for _ in $(seq "$2"); do curl -sf "$1" >/dev/null && return 0; sleep 1; done
    echo "$1 did not answer in $2 s" >&2; return 1
}

load "start"
if [ ! -f "$OUT/profile.json" ]; then
    "$BM" run --workload step-profile --engine continuous --threads 1 --max-batched-tokens 2048 \
        --out "$OUT/fit" --no-report
    "$BM" sim fit "$OUT/fit" -o "$OUT/profile.json"
    load "profile fitted"
fi

WORKERS=()
for i in $(seq "$REPLICAS"); do
    rm -f "$OUT/steps-r$i.jsonl"
    "$BM" serve --threads 1 --port $((PORT + i)) --step-trace "$OUT/steps-r$i.jsonl" > "$OUT/replica-$i.log" 2>&1 &
    STARTED+=($!)
    WORKERS+=("http://127.0.0.1:$((PORT + i))")
done
for url in "${WORKERS[@]}"; do wait_http "$url/health" 600; done
load "replicas up"

measured_run() {  # NAME POLICY SEED (empty: the workload's): one run through the router, with each replica's share of its steps and /metrics
    local name=$1 policy=$2 seed=$3 i lines=()
    "$ROUTER" --host 127.0.0.1 --port "$PORT" --worker-urls "${WORKERS[@]}" --policy "$policy" \
        --log-level warning > "$OUT/router-$name.log" 2>&1 &
    router_pid=$!
    STARTED+=("$router_pid")
    wait_http "http://127.0.0.1:$PORT/health" 60
    rm -rf "${OUT:?}/$name"
    # the HTTP engine's own reset goes to the router, which does not pass /reset_prefix_cache on: each replica
    # is reset here, so no policy finds the prompts the previous one left in the caches
    for url in "${WORKERS[@]}"; do curl -sf -X POST "$url/reset_prefix_cache" >/dev/null; done
    for i in $(seq "$REPLICAS"); do  # the replicas are idle between runs: the lines after these are this run's
        lines[i]=$(wc -l < "$OUT/steps-r$i.jsonl")
        curl -sf "${WORKERS[i - 1]}/metrics" > "$OUT/r$i.before.prom"
    done
    load "$name: before the run"
    "$BM" run --workload "$WORKLOAD" --requests "$REQUESTS" ${RATE:+--rate "$RATE"} ${seed:+--seed "$seed"} --no-report \
        --out "$OUT/$name" --engine "http:url=http://127.0.0.1:$PORT,router=$policy,replicas=$REPLICAS,label=$name"
    load "$name: after the run"
    kill "$router_pid"; wait "$router_pid" 2>/dev/null || true
    mkdir -p "$OUT/$name/replicas"
    for i in $(seq "$REPLICAS"); do
        curl -sf "${WORKERS[i - 1]}/metrics" > "$OUT/$name/replicas/r$i.after.prom"
        mv "$OUT/r$i.before.prom" "$OUT/$name/replicas/r$i.before.prom"
        tail -n +$((lines[i] + 1)) "$OUT/steps-r$i.jsonl" > "$OUT/$name/replicas/r$i.steps.jsonl"
    done
}

# The twin's serving path and contention, measured on runs of their own under another seed (never on a run they
# judge): the path, request by request, as one replica driven directly against the same schedule in process
# (the engine the profile was fitted on); the contention as the fleet's steps against the profile's price.
if [ "${CALIBRATE:-1}" != 0 ]; then
    rm -rf "$OUT/calibration-inprocess" "$OUT/calibration-direct"
    load "calibration: before the runs"
    "$BM" run --workload "$WORKLOAD" --requests "$REQUESTS" ${RATE:+--rate "$RATE"} --seed "$CALIBRATION_SEED" \
        --engine continuous --threads 1 --max-batched-tokens 2048 --no-report --out "$OUT/calibration-inprocess"
    curl -sf -X POST "${WORKERS[0]}/reset_prefix_cache" >/dev/null
    "$BM" run --workload "$WORKLOAD" --requests "$REQUESTS" ${RATE:+--rate "$RATE"} --seed "$CALIBRATION_SEED" \
        --engine "http:url=${WORKERS[0]},label=direct" --no-report --out "$OUT/calibration-direct"
    measured_run calibration round_robin "$CALIBRATION_SEED"
    "$BM" sim serving-path "$OUT/calibration" --profile "$OUT/profile.json" -o "$OUT/serving.json" \
        --paired "$OUT/calibration-direct" "$OUT/calibration-inprocess"
fi

for policy in $POLICIES; do
    measured_run "$policy" "$policy" ""  # the workload's own seed, as before
    "$BM" sim serving-path "$OUT/$policy" --profile "$OUT/profile.json"  # this run's own split, for the record
    "$BM" sim fidelity "$OUT/$policy" --profile "$OUT/profile.json" --seeds "$SEEDS" --json "$OUT/$policy/fidelity.json"
    if [ -f "$OUT/serving.json" ]; then
        "$BM" sim fidelity "$OUT/$policy" --profile "$OUT/profile.json" --seeds "$SEEDS" \
            --serving "$OUT/serving.json" --json "$OUT/$policy/fidelity-serving.json"
    fi
done

# A replica dies mid-run (killed once DIE_AFTER requests of a round_robin run have finished; DIE_AFTER=0 skips
# it): what the router and the run make of it. Not judged against a twin: the twin's replicas never die.
DIE_AFTER=${DIE_AFTER:-20}
if [ "$DIE_AFTER" != 0 ]; then
    "$ROUTER" --host 127.0.0.1 --port "$PORT" --worker-urls "${WORKERS[@]}" --policy round_robin \
        --log-level warning > "$OUT/router-die.log" 2>&1 &
    router_pid=$!
    STARTED+=("$router_pid")
    wait_http "http://127.0.0.1:$PORT/health" 60
    rm -rf "$OUT/die"
    last=${STARTED[$((REPLICAS - 1))]}  # the last replica's pid
    (
        until [ "$(cat "$OUT/die/records.jsonl" 2>/dev/null | wc -l)" -ge "$DIE_AFTER" ]; do sleep 0.2; done
        kill -9 "$last"; echo "killed replica $REPLICAS (pid $last) after $DIE_AFTER finished requests"
    ) &
    STARTED+=($!)
    "$BM" run --workload "$WORKLOAD" --requests "$REQUESTS" ${RATE:+--rate "$RATE"} --no-report --out "$OUT/die" \
        --engine "http:url=http://127.0.0.1:$PORT,router=round_robin,replicas=$REPLICAS,label=die" || true
fi
load "end"
