#!/usr/bin/env bash
# Peers against one `batchmark serve`, interleaved with batchmark's own HTTP client, ROUNDS times (not CI:
# it installs AIPerf into a throwaway virtualenv from the package index and takes minutes).
#   docs/peers/run.sh OUT_DIR [ROUNDS]     (from the repository root, with batchmark importable)
# Writes OUT_DIR/roundN/{aiperf,batchmark}, then prints docs/peers/table.py's table.
# Load: docs/peers/concurrency16.toml (16 users, 64 requests, 64-token prompts, 64 forced output tokens).
# AIPerf 0.13.0 runs every round; inference-perf 0.7.0 (Python >= 3.12) runs too when PY312 names a CPython 3.12
# (default: pyenv's 3.12.1, on this machine's image beside the system 3.11), with
# docs/peers/inference-perf-concurrency16.yaml. GuideLLM 0.8.1 and `vllm bench serve` 0.32.0 ran once each, by
# hand, not in this script: their commands are in tests/importers/fixtures/{guidellm-0.8.1,vllm-0.32.0-cpu}/README.md.
set -euo pipefail
OUT=${1:?OUT_DIR}; ROUNDS=${2:-3}; PORT=${PORT:-18734}; PY=${PY:-.venv/bin/python}
mkdir -p "$OUT"
VENV="$OUT/venv-aiperf"
[ -x "$VENV/bin/aiperf" ] || { "$PY" -m venv "$VENV" && "$VENV/bin/pip" install -q aiperf==0.13.0; }
PY312=${PY312:-/root/.pyenv/versions/3.12.1/bin/python3}
IPVENV="$OUT/venv-inference-perf"
if [ -x "$PY312" ] && [ ! -x "$IPVENV/bin/inference-perf" ]; then
  "$PY312" -m venv "$IPVENV" && "$IPVENV/bin/pip" install -q inference-perf==0.7.0
fi
"$PY" -m harness.cli serve --engine continuous --port "$PORT" --threads 1 > "$OUT/serve.log" 2>&1 &
SERVE=$!
trap 'kill $SERVE' EXIT
until curl -sf "http://127.0.0.1:$PORT/health" > /dev/null; do sleep 2; done
for i in $(seq 1 "$ROUNDS"); do
  R="$OUT/round$i"
  # AIPerf reads the local tokenizer directory only outside HF offline mode (it snapshot_downloads in it)
  env -u HF_HUB_OFFLINE -u TRANSFORMERS_OFFLINE "$VENV/bin/aiperf" profile --model batchmark \
    --url "http://127.0.0.1:$PORT" --endpoint-type completions --streaming --concurrency 16 --request-count 64 \
    --prompt-input-tokens-mean 64 --prompt-input-tokens-stddev 0 --prompt-output-tokens-mean 64 \
    --prompt-output-tokens-stddev 0 --extra-inputs ignore_eos:true --use-legacy-max-tokens \
    --tokenizer "$PWD/engines/model/tokenizer" --random-seed 0 --output-artifact-dir "$R/aiperf" --no-auto-plot \
    > "$R.aiperf.log" 2>&1
  "$PY" -m harness.cli run --workload docs/peers/concurrency16.toml --engine http --url "http://127.0.0.1:$PORT" \
    --no-report --no-progress --out "$R/batchmark" > "$R.batchmark.log" 2>&1
  "$PY" -m harness.cli import "$R/aiperf/profile_export.jsonl" --out "$R/aiperf-imported" > "$R.import.log"
  if [ -x "$IPVENV/bin/inference-perf" ]; then
    sed "s#@PORT@#$PORT#; s#@OUT@#$R/inference-perf#" docs/peers/inference-perf-concurrency16.yaml > "$R.ip.yaml"
    "$IPVENV/bin/inference-perf" -c "$R.ip.yaml" > "$R.inference-perf.log" 2>&1
    "$PY" -m harness.cli import "$R/inference-perf/inference-perf.partial.stage_0.yaml" \
      --out "$R/inference-perf-imported" >> "$R.import.log"
  fi
done
"$PY" docs/peers/table.py "$OUT"
