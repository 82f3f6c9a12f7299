#!/usr/bin/env bash
# zoo on a CUDA machine, in one go: install, the GPU tests, and benchmarks/gpu_rollout.py's table.
#
#   bash benchmarks/gpu_check.sh            # from the repo root; prints the table at the end
#
# It keeps a CUDA torch the machine already has (a venv with --system-site-packages), else installs
# torch 2.13.0 from PyPI (the CUDA build). The tests are the tensor-path and Genesis ones, run with
# ZOO_TEST_DEVICE=cuda so that every rollout, env and policy lives on the GPU; then the benchmark at
# 1, 64 and 4096 envs. Target: (b) zoo >= 0.9x (a) random at 4096 envs.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${ZOO_GPU_VENV:-.venv-gpu}
python3 -m venv --system-site-packages "$VENV"
PY="$VENV/bin/python"
"$PY" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null \
  || "$PY" -m pip install -q "torch==2.13.0"
"$PY" -m pip install -q -e ".[dev,rsl,skrl,genesis]"
"$PY" - <<'PY'
import torch
assert torch.cuda.is_available(), "no CUDA device visible to torch"
print("torch", torch.__version__, "on", torch.cuda.get_device_name(0))
PY
export ZOO_TEST_DEVICE=cuda PYTHONUNBUFFERED=1
"$PY" -m pytest -p no:xdist -q tests/test_tensor_rollout.py tests/test_genesis_eval.py
"$PY" benchmarks/gpu_rollout.py --device cuda --num-envs 1 64 4096
