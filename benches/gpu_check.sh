#!/usr/bin/env bash
# One prepared check for a machine with an NVIDIA GPU: the four algorithms' update times on CUDA against
# the CPU (DQN's, SAC's and PPO's also captured as CUDA graphs, `cuda_graphs=True`), exported policies on
# onnxruntime (its CUDA provider where installed), batched PPO CartPole end to end on the GPU at 1k/4k/16k
# envs, eager and captured (env, policy and update on the device; host syncs per iteration counted; captured:
# the update's minibatch steps and the rollout's collection), where a 16k-env iteration's time goes,
# PPO on MinAtar's image frames at 64/256 envs, CartPole solved with `--preset gpu`, the CUDA tests, the
# compiled updates' kernels on its CPU, and the bandit and CartPole examples on CUDA. Every step has a
# timeout (they add up to 675 s; the steps take a fraction of theirs). Results go to $1 (or $OUT).
#
# The lent GPU machine has python3 (3.12) with CUDA torch, onnxruntime (CPU build), numpy, pytest and tqdm,
# but no network and no gymnasium / array-api-compat / numba. Bring those as wheels in .whl/ (ignored by git),
# llvmlite's unpacked and recompressed (its 60 MB wheel is 41 MB as .tar.xz; a device run carries 64 MiB):
#   echo /.whl/ >> .git/info/exclude
#   .venv/bin/python -m pip download --no-deps --only-binary=:all: --python-version 3.12 -d .whl \
#     gymnasium==1.4.0 array-api-compat==1.16.0 farama-notifications==0.0.6 numba==0.68.1 llvmlite==0.50.0 \
#     minatar==1.0.15
#   mkdir /tmp/llvmlite && python3 -m zipfile -e .whl/llvmlite-*.whl /tmp/llvmlite && rm .whl/llvmlite-*.whl
#   tar cJf .whl/llvmlite-0.50.0-cp312-site.tar.xz -C /tmp/llvmlite .
# and pass `carry: [".whl"]` to the device run. Then: bash benches/gpu_check.sh
set -uo pipefail
cd "$(dirname "$0")/.."
out="${1:-${OUT:-gpu-check}}"
mkdir -p "$out"
# A GPU check on a machine without a GPU measures nothing: say so and fail, never skip quietly (before the
# wheels, which are the device's Python's and need not install here).
if ! python3 -c "import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null; then
  echo "gpu_check: no CUDA device here (torch.cuda.is_available() is False, or torch is missing); this script measures a GPU: run it on the lent device" >&2
  exit 2
fi
if compgen -G ".whl/*.whl" >/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/thrust-site .whl/*.whl
  for site in .whl/*-site.tar.xz; do [ -e "$site" ] && tar xJf "$site" -C /tmp/thrust-site; done
  export PYTHONPATH="/tmp/thrust-site:${PYTHONPATH:-}"
fi
export PYTHONPATH="$PWD:${PYTHONPATH:-}" PYTHONUNBUFFERED=1
log="$out/gpu_check.log"
{
  echo "== host"; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv || true
  python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, torch.cuda.get_device_name(0))"
  echo "== update times: the four algorithms on cpu and cuda, alternating; DQN, SAC and PPO also as captured CUDA graphs"
  timeout 140 python3 benches/trainer_throughput.py --quick --json "$out/trainer_throughput.json"
  echo "== exported policies (torch eager, onnxruntime cpu/cuda)"
  timeout 30 python3 benches/onnx_policies.py --quick --no-browser --json "$out/onnx_policies.json"
  echo "== PPO on batched CartPole, env + policy + update on the GPU (goal: >= 10M env-steps/s at 16k envs)"
  timeout 85 python3 benches/batched_ppo.py --quick --devices cuda --env-backends torch --envs 1024,4096,16384 \
    --json "$out/batched_ppo_cuda.json"
  echo "== where one captured 16k-env iteration's time goes (phases, then the ops with the most device time)"
  timeout 60 python3 benches/batched_ppo.py --quick --devices cuda --env-backends torch --envs 16384 --cuda-graphs on \
    --profile > "$out/batched_ppo_profile.txt" 2>&1; grep -E "^N=|Self CUDA time total" "$out/batched_ppo_profile.txt"
  echo "== the same on the CPU at 1k envs, for the ratio"
  timeout 25 python3 benches/batched_ppo.py --quick --devices cpu --envs 1024 --json "$out/batched_ppo_cpu.json"
  echo "== PPO on image observations: MinAtar Breakout (small CNN), 64/256 envs on cuda (the CPU side: benches/image_ppo.py here)"
  timeout 45 python3 benches/image_ppo.py --devices cuda --envs 64,256 --json "$out/image_ppo.json"
  echo "== CartPole solved on the GPU: --preset gpu (4,096 envs on the device, CUDA graphs), 5 seeds"
  timeout 60 python3 benches/fast_cartpole.py --gpu --seeds 5
  echo "== the CUDA tests: captured DQN/SAC/PPO updates against eager ones, the batched envs, training and loading on cuda"
  timeout 90 python3 -m pytest -q -p no:cacheprovider tests/speed/test_cuda_graphs.py tests/training/test_device.py tests/envs/test_batched.py -k cuda
  echo "== the compiled updates' kernels on this machine's CPU (update=numba; the BLAS its torch build exports)"
  timeout 45 python3 -c "from thrust_app.speed.numba_kernels import SGEMM_SOURCE; print('wide products by', SGEMM_SOURCE)"
  timeout 45 python3 -m pytest -q -p no:cacheprovider tests/speed/test_numba_kernels.py tests/speed/test_numba_dqn.py
  echo "== examples on cuda (their progress bars: $out/examples_stderr.log)"
  THRUST_DEVICE=cuda timeout 15 python3 examples/train_simple_bandit.py 2>>"$out/examples_stderr.log"
  THRUST_DEVICE=cuda TOTAL_TIMESTEPS=40000 timeout 35 python3 examples/train_cartpole_modern.py 2>>"$out/examples_stderr.log"
  echo "== done in $SECONDS s"
} 2>&1 | tee "$log"
echo "results in $out"
