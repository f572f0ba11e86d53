#!/usr/bin/env bash
# The GPU checks of one lease, one after the other inside a time budget (a lent GPU machine's
# commands are capped, and a half-run check is worth more than none):
#
#   bench/gpu_checks.sh MODEL_DIR [SECONDS [CHECK...]]   # SECONDS: the whole budget, default 570
#
# CHECKs, in the order given (default: tests smoke constrained ray trl):
#   tests  the suite's GPU tests: tests/backends/test_gpu_backend.py (vLLM's command line, our tool-parser
#          plugin inside vLLM), tests/backends/test_backend_contract.py on vLLM + Unsloth, tests/backends/test_gpu_unsloth.py
#   smoke  bench/gpu_smoke.sh MODEL_DIR 10 (`mcprl train` against the calculator server)
#   constrained  the same, 5 steps with --constrain-tool-calls: vLLM's grammar-masked logprobs, the
#          trainer rescoring those turns itself (rescored_tokens in each step's row)
#   ray    3 steps of `mcprl train --cluster ray` on this one GPU: a vLLM policy replica on half of
#          it, the trainer actor (Unsloth) on the other half (needs ray: the project's gpu-wheels.txt)
#   trl    bench/gpu_grpo_vs_trl.py (our GPU step against TRL's colocated vLLM)
# Each runs under what is left of the budget; one that cannot start with enough left is skipped and
# named as such. vLLM's and Triton's caches go under /tmp/cache unless set (the first check warms
# them for the others). Logs go to $OUT (else a temporary directory); the last lines are a summary.
set -uo pipefail

MODEL_DIR=${1:?usage: bench/gpu_checks.sh MODEL_DIR [SECONDS [tests|smoke|constrained|ray|trl ...]]}
BUDGET=${2:-570}
shift $(( $# < 2 ? $# : 2 ))
CHECKS=("${@:-tests smoke constrained ray trl}")
CHECKS=(${CHECKS[*]})
REPO=$(cd "$(dirname "$0")/.." && pwd)
LOGS=${OUT:-$(mktemp -d -t mcprl-gpu-checks-XXXX)}
mkdir -p "$LOGS"
export VLLM_CACHE_ROOT=${VLLM_CACHE_ROOT:-/tmp/cache/vllm} FLASHINFER_WORKSPACE_BASE=${FLASHINFER_WORKSPACE_BASE:-/tmp/cache}
export TRITON_CACHE_DIR=${TRITON_CACHE_DIR:-/tmp/cache/triton} TORCHINDUCTOR_CACHE_DIR=${TORCHINDUCTOR_CACHE_DIR:-/tmp/cache/inductor}
export PYTHONUNBUFFERED=1
PY=${MCPRL_GPU_PYTHON:-python3}
START=$(date +%s)
SUMMARY=()

# check NAME MIN_SECONDS LOG COMMAND...: run COMMAND with what is left of the budget, if at least MIN_SECONDS is
check() {
  local name=$1 need=$2 log=$3; shift 3
  local left=$(( BUDGET - ($(date +%s) - START) ))
  if (( left < need )); then SUMMARY+=("$name: SKIPPED (${left} s left, needs ${need})"); return; fi
  echo "== $name (up to ${left} s; log $log)"
  local t0=$(date +%s)
  (cd "$REPO" && timeout -k 10 "$left" "$@") > "$LOGS/$log" 2>&1
  local rc=$?
  # a check cut off at its limit leaves vLLM, Ray and MCP servers behind, holding the GPU
  pkill -f vllm.entrypoints 2>/dev/null; pkill -f mcprl.servers 2>/dev/null; "$PY" -m ray.scripts.scripts stop --force >/dev/null 2>&1; sleep 1
  local verdict=OK; (( rc == 124 || rc == 137 )) && verdict="CUT OFF at the budget" || { (( rc != 0 )) && verdict="FAILED (rc $rc)"; }
  SUMMARY+=("$name: $verdict in $(( $(date +%s) - t0 )) s")
  tail -n 25 "$LOGS/$log"
}

for c in "${CHECKS[@]}"; do
  case $c in
    # One pytest: the CPU cases here, and the GPU cases in the child it starts (Unsloth patches the
    # process it is imported in, after which the CPU cases cannot run there).
    tests) check "GPU tests" 120 gpu_tests.log env MCPRL_GPU_TEST_MODEL="$MODEL_DIR" "$PY" -m pytest -s -q -rA -p no:cacheprovider \
             --durations=15 tests/backends/test_gpu_backend.py tests/backends/test_backend_contract.py tests/backends/test_gpu_unsloth.py ;;
    smoke) check "smoke, 10 steps" 150 gpu_smoke.log env MCPRL_GPU_PYTHON="$PY" bash bench/gpu_smoke.sh "$MODEL_DIR" 10 ;;
    constrained) check "smoke, 5 steps, constrained tool calls" 130 gpu_constrained.log env MCPRL_GPU_PYTHON="$PY" \
             bash bench/gpu_smoke.sh "$MODEL_DIR" 5 --constrain-tool-calls ;;
    ray)   check "ray: vLLM replica + Unsloth trainer actor, 3 steps" 180 gpu_ray.log env MCPRL_HOME="$(mktemp -d)" \
             RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0 "$PY" -m mcprl.cli train --server "$PY -m mcprl.servers.calculator" --tasks calculator \
             --model "$MODEL_DIR" --name ray-gpu --steps 3 --group-size 4 --groups-per-step 2 --eval-every 0 --val-size 8 \
             --cluster ray --rollout-workers 2 --worker-cpus 1 --policy-replicas 1 --replica-cpus 2 --replica-gpus 0.5 \
             --trainer-actor --trainer-cpus 2 --trainer-gpus 0.5 ;;
    trl)   check "mcprl vs TRL" 240 gpu_grpo_vs_trl.log "$PY" bench/gpu_grpo_vs_trl.py --model "$MODEL_DIR" --steps 3 --warmup 1 --out "$LOGS" ;;
    *)     echo "unknown check $c (tests, smoke, constrained, ray, trl)"; exit 2 ;;
  esac
done

echo "== summary ($(( $(date +%s) - START )) s of ${BUDGET})"
printf '%s\n' "${SUMMARY[@]}"
