#!/usr/bin/env bash
# GPU smoke run, one command on a machine with an NVIDIA GPU:
#
#   bench/gpu_smoke.sh MODEL_DIR [STEPS [TRAIN_FLAG...]]   e.g. bench/gpu_smoke.sh "$MODEL_DIR" 10
#                                                          or bench/gpu_smoke.sh "$MODEL_DIR" 5 --constrain-tool-calls
#
# Uses the Python that already imports vllm, unsloth and mcprl (MCPRL_GPU_PYTHON, else python3)
# when there is one, else installs the gpu extra into a venv of its own (MCPRL_GPU_VENV, default
# .venv-gpu). Trains STEPS (default 3) steps of `mcprl train --tasks calculator` against the shipped
# calculator server on the local model directory and prints each step's train time, adapter swap
# latency, vLLM sleep/wake times and the trainer's peak GPU memory (from the checkpoints'
# trainer_state.json), plus the GPU's peak memory use as nvidia-smi saw it (trainer and vLLM).
# Logs go to $OUT when set (gpu_smoke_train.log, gpu_smoke_vllm.log), else to a temporary directory.
set -euo pipefail

MODEL_DIR=${1:?usage: bench/gpu_smoke.sh MODEL_DIR [STEPS [TRAIN_FLAG...]]}
STEPS=${2:-3}
EXTRA=("${@:3}")  # more `mcprl train` flags
REPO=$(cd "$(dirname "$0")/.." && pwd)
VENV=${MCPRL_GPU_VENV:-$REPO/.venv-gpu}
TORCH=${MCPRL_GPU_TORCH:-2.11.0}  # the CUDA torch to install a venv with (vLLM 0.26; 2.13.0 gives vLLM 0.32)

command -v nvidia-smi >/dev/null || { echo "error: nvidia-smi not found; this needs a machine with an NVIDIA GPU" >&2; exit 2; }
[ -f "$MODEL_DIR/config.json" ] || { echo "error: $MODEL_DIR has no config.json; pass a local Hugging Face model directory" >&2; exit 2; }
MODEL_DIR=$(cd "$MODEL_DIR" && pwd)

PY=${MCPRL_GPU_PYTHON:-python3}
# find_spec, not import: importing unsloth takes half a minute
HAS_STACK="import importlib.util as u, sys; sys.exit(not all(u.find_spec(p) for p in ('vllm', 'unsloth', 'mcprl')))"
if (cd "$REPO" && "$PY" -c "$HAS_STACK") >/dev/null 2>&1; then
  echo "== using $PY (vllm, unsloth and mcprl import)"
else
  PY=$VENV/bin/python
  if ! (cd "$REPO" && "$PY" -c "$HAS_STACK") >/dev/null 2>&1; then
    echo "== installing mcprl[gpu] into $VENV beside torch $TORCH (several GB, takes a while)"
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install -q --upgrade pip
    # torch first and from the default index alone: --isolated skips configured find-links that may
    # hold a CPU-only build of the same version, which pip would otherwise prefer.
    "$VENV/bin/pip" --isolated install -q "torch==$TORCH"
    "$VENV/bin/pip" install -q -e "$REPO[gpu,dev]" "torch==$TORCH"
  fi
fi
"$PY" -c "
import sys, torch
from importlib.metadata import version
if not torch.cuda.is_available():
    sys.exit(f'error: torch {torch.__version__} sees no GPU (a CPU-only build?); install the CUDA build of torch $TORCH')
print(f'== torch {torch.__version__} (CUDA {torch.version.cuda}), vllm {version(\"vllm\")}, unsloth {version(\"unsloth\")} on {torch.cuda.device_count()} x {torch.cuda.get_device_name(0)}')
"

RUN=$(mktemp -d -t mcprl-gpu-smoke-XXXX)
LOGS=${OUT:-$RUN}
mkdir -p "$LOGS"
export MCPRL_HOME=$RUN/home
nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 500 > "$RUN/gpu_memory.csv" &
SMI=$!
trap 'kill $SMI 2>/dev/null || true; cp "$MCPRL_HOME"/default/smoke/vllm.log "$LOGS/gpu_smoke_vllm.log" 2>/dev/null || true' EXIT

echo "== mcprl train: $STEPS steps on $MODEL_DIR (log: $LOGS/gpu_smoke_train.log)"
START=$(date +%s)
(cd "$REPO" && "$PY" -m mcprl.cli train --server "$PY -m mcprl.servers.calculator" --tasks calculator --model "$MODEL_DIR" \
  --name smoke --steps "$STEPS" --group-size 4 --groups-per-step 2 --eval-every 0 --val-size 8 "${EXTRA[@]}") 2>&1 | tee "$LOGS/gpu_smoke_train.log"
echo "== wall time: $(( $(date +%s) - START )) s"
kill $SMI 2>/dev/null || true

"$PY" - "$MCPRL_HOME" "$RUN/gpu_memory.csv" <<'EOF'
import json, sys
from pathlib import Path

home, smi = Path(sys.argv[1]), Path(sys.argv[2])
states = sorted(home.glob("*/*/checkpoints/*/trainer_state.json"))
rows = [json.loads(p.read_text()) for p in states]
rows = [r for r in rows if r.get("step", 0) > 0]
if not rows:
    sys.exit(f"error: no trained checkpoints under {home}; see the train log")
cols = ["train_seconds", "swap_seconds", "sleep_seconds", "wake_seconds", "peak_gpu_memory_gb", "loss", "trained", "rescored_tokens"]
print("step  " + "  ".join(f"{c:>18}" for c in cols))
for r in rows:
    m = r["metrics"]
    print(f"{r['step']:>4}  " + "  ".join(f"{m[c]:>18.3f}" if c in m else f"{'-':>18}" for c in cols))
m = [r["metrics"] for r in rows]
mean = lambda k: sum(x[k] for x in m if k in x) / max(1, sum(k in x for x in m))
print(f"SMOKE OK: {len(rows)} steps, mean step time {mean('train_seconds'):.2f} s, mean swap latency {mean('swap_seconds'):.3f} s, "
      f"trainer peak GPU memory {max(x.get('peak_gpu_memory_gb', 0) for x in m):.2f} GiB")
used = [int(v) for line in smi.read_text().splitlines() for v in line.split(",") if v.strip().isdigit()]
if used:
    print(f"GPU memory in use at peak (nvidia-smi, trainer + vLLM, per GPU max): {max(used) / 1024:.2f} GiB")
EOF
