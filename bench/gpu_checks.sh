#!/usr/bin/env bash
# The GPU checks of one lease, one after the other inside a time budget (a lent GPU machine's
# commands are capped, and a half-run check is worth more than none):
#
#   bench/gpu_checks.sh MODEL_DIR [SECONDS]      # SECONDS: the whole budget, default 570
#
# 1. the suite's GPU tests: tests/test_gpu_backend.py (vLLM's command line, our tool-parser plugin
#    inside vLLM), tests/test_backend_contract.py on vLLM + Unsloth, tests/test_gpu_unsloth.py;
# 2. bench/gpu_smoke.sh MODEL_DIR 10 (`mcprl train` against the calculator server);
# 3. bench/gpu_grpo_vs_trl.py (our GPU step against TRL's colocated vLLM), when time is left.
# Each runs under what is left of the budget; one that cannot start with enough left is skipped and
# named as such. vLLM's and Triton's caches go under /tmp/cache unless set (the first check warms
# them for the others). Logs go to $OUT (else a temporary directory); the last lines are a summary.
set -uo pipefail

MODEL_DIR=${1:?usage: bench/gpu_checks.sh MODEL_DIR [SECONDS]}
BUDGET=${2:-570}
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
  # a check cut off at its limit leaves vLLM and MCP servers behind, holding the GPU
  pkill -f vllm.entrypoints 2>/dev/null; pkill -f mcprl.servers 2>/dev/null; sleep 1
  local verdict=OK; (( rc == 124 || rc == 137 )) && verdict="CUT OFF at the budget" || { (( rc != 0 )) && verdict="FAILED (rc $rc)"; }
  SUMMARY+=("$name: $verdict in $(( $(date +%s) - t0 )) s")
  tail -n 25 "$LOGS/$log"
}

# One pytest: the CPU cases here, and the GPU cases in the child it starts (Unsloth patches the
# process it is imported in, after which the CPU cases cannot run there).
check "GPU tests" 120 gpu_tests.log env MCPRL_GPU_TEST_MODEL="$MODEL_DIR" "$PY" -m pytest -s -q -rA -p no:cacheprovider \
  --durations=15 tests/test_gpu_backend.py tests/test_backend_contract.py tests/test_gpu_unsloth.py
# the vLLM log of the last test server, for a failure's cause
LAST_VLLM_LOG=$(find /tmp/pytest-of-* -name vllm.log -printf '%T@ %p\n' 2>/dev/null | sort -n | tail -1 | cut -d' ' -f2)
[ -n "$LAST_VLLM_LOG" ] && cp "$LAST_VLLM_LOG" "$LOGS/gpu_tests_vllm.log"
check "smoke, 10 steps" 150 gpu_smoke.log env MCPRL_GPU_PYTHON="$PY" bash bench/gpu_smoke.sh "$MODEL_DIR" 10
check "mcprl vs TRL" 240 gpu_grpo_vs_trl.log "$PY" bench/gpu_grpo_vs_trl.py --model "$MODEL_DIR" --steps 3 --warmup 1 --out "$LOGS"

echo "== summary ($(( $(date +%s) - START )) s of ${BUDGET})"
printf '%s\n' "${SUMMARY[@]}"
