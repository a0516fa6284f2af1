#!/usr/bin/env bash
# What vllm-router's hop adds: one `batchmark serve --threads 1` replica driven directly and through vllm-router
# (one worker), interleaved direct, router, direct, router; each run judged against the same one-replica twin
# (`router=round_robin,replicas=1` on both: the twin is one serve replica either way). Needs the profile
# docs/cluster/real_router.sh fits (runs/real-router/profile.json) and vllm-router (make router-bench).
#
#   flock /tmp/batchmark-timing.lock bash docs/cluster/router_hop.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
BM=${BM:-.venv/bin/batchmark}
ROUTER=${ROUTER:-.venv/bin/vllm-router}
PROFILE=${PROFILE:-runs/real-router/profile.json}
OUT=${OUT:-runs/real-router/hop}
mkdir -p "$OUT"
STARTED=()
cleanup() { for pid in "${STARTED[@]}"; do kill "$pid" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT
wait_http() { for _ in $(seq "$2"); do curl -sf "$1" >/dev/null && return 0; sleep 1; done; return 1; }
echo "load average (start): $(cut -d' ' -f1-3 /proc/loadavg)"
"$BM" serve --threads 1 --port 18411 > "$OUT/replica.log" 2>&1 &
STARTED+=($!)
wait_http http://127.0.0.1:18411/health 600
"$ROUTER" --host 127.0.0.1 --port 18410 --worker-urls http://127.0.0.1:18411 --policy round_robin \
    --log-level warning > "$OUT/router.log" 2>&1 &
STARTED+=($!)
wait_http http://127.0.0.1:18410/health 60
for target in direct:18411 router:18410 direct2:18411 router2:18410; do
    name=${target%%:*}; port=${target##*:}
    curl -sf -X POST http://127.0.0.1:18411/reset_prefix_cache >/dev/null
    rm -rf "${OUT:?}/$name"
    echo "load average ($name): $(cut -d' ' -f1-3 /proc/loadavg)"
    "$BM" run --workload chat-small --requests 64 --no-report --no-progress --out "$OUT/$name" \
        --engine "http:url=http://127.0.0.1:$port,router=round_robin,replicas=1,label=$name"
    "$BM" sim fidelity "$OUT/$name" --profile "$PROFILE" --seeds 5
done
echo "load average (end): $(cut -d' ' -f1-3 /proc/loadavg)"
