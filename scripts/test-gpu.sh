#!/usr/bin/env bash
# The GPU tier (issue 35), run by name and not in CI: CUDA DDP through the spotagg hook and
# backend against a reference on the same GPUs (float32, float16 with GradScaler and a planted
# overflow, bfloat16), and the bucket pipeline's figures (python/gpu/test_cuda.py). Needs a CUDA
# device; without one every test fails with NOT RUN. The Python environment is the test tier's
# (scripts/python-env.sh: torch from PyPI, the CUDA build).
#
#   scripts/test-gpu.sh [pytest arguments]
set -euo pipefail
cd "$(dirname "$0")/.."
py=$(SPOTAGG_PY_PROFILE=${SPOTAGG_PY_PROFILE:-release} scripts/python-env.sh)
if ! "$py" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)'; then
    echo "NOT RUN: no CUDA device visible to torch (torch.cuda.is_available() is False)" >&2
    exit 1
fi
"$py" -c 'import torch; print("== GPU tier on", torch.cuda.device_count(), "x", torch.cuda.get_device_name(0))'
export PYTHONPATH=$PWD/python/tests:$PWD/python/gpu${PYTHONPATH:+:$PYTHONPATH}
exec "$py" -m pytest -p no:cacheprovider -ra -s python/gpu "$@"
