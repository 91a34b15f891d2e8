#!/usr/bin/env bash
# One prepared check for a machine with an NVIDIA GPU: both benches with their /cuda column, and the
# bandit and CartPole examples on CUDA. Finishes well within 8 minutes; results go to $1 (or $OUT).
#
# The lent GPU machine has python3 with CUDA torch, onnxruntime, numpy and tqdm, but no network and
# no gymnasium / array-api-compat. Bring those as wheels in .whl/ (ignored by git) before the run:
#   echo /.whl/ >> .git/info/exclude
#   python3 -m pip download --no-deps --only-binary=:all: -d .whl gymnasium array-api-compat farama-notifications
# and pass `carry: [".whl"]` to the device run. Then: bash benches/gpu_check.sh
set -uo pipefail
cd "$(dirname "$0")/.."
out="${1:-${OUT:-gpu-check}}"
mkdir -p "$out"
if compgen -G ".whl/*.whl" >/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/thrust-site .whl/*.whl
  export PYTHONPATH="/tmp/thrust-site:${PYTHONPATH:-}"
fi
export PYTHONPATH="$PWD:${PYTHONPATH:-}" PYTHONUNBUFFERED=1
# A GPU check on a machine without a GPU measures nothing: say so and fail, never skip quietly.
if ! python3 -c "import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null; then
  echo "gpu_check: no CUDA device here (torch.cuda.is_available() is False, or torch is missing); this script measures a GPU: run it on the lent device" >&2
  exit 2
fi
log="$out/gpu_check.log"
{
  echo "== host"; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv || true
  python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, torch.cuda.get_device_name(0))"
  echo "== trainer throughput (cpu and cuda, alternating)"
  timeout 200 python3 benches/trainer_throughput.py --json "$out/trainer_throughput.json"
  echo "== exported policies (torch eager, onnxruntime cpu/cuda)"
  timeout 90 python3 benches/onnx_policies.py --no-browser --json "$out/onnx_policies.json"
  echo "== PPO on batched CartPole, env + policy + update on one device"
  timeout 120 python3 benches/batched_ppo.py --devices cpu,cuda --json "$out/batched_ppo.json"
  echo "== examples on cuda"
  THRUST_DEVICE=cuda timeout 60 python3 examples/train_simple_bandit.py
  THRUST_DEVICE=cuda TOTAL_TIMESTEPS=40000 timeout 90 python3 examples/train_cartpole_modern.py 2>/dev/null
} 2>&1 | tee "$log"
echo "results in $out"
