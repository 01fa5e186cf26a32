"""The GPU tier (issue 35): CUDA buckets through the DDP hook and the spotagg backend, against
a reference DDP on the same GPUs (NCCL where each rank has a GPU, else Gloo's CUDA all-reduce),
and the bucket pipeline's figures. Run by name, not in CI: scripts/test-gpu.sh. Without a CUDA
device every test fails with NOT RUN."""

import numpy as np
import pytest
import torch

import spotagg
import gpu_cases
from conftest import loopback_job, switch_bind
from ranks import spawn


@pytest.fixture(autouse=True)
def _cuda():
    if not torch.cuda.is_available():
        pytest.fail("NOT RUN: no CUDA device (torch.cuda.is_available() is False); run on a machine with a GPU")


@pytest.mark.parametrize("mode", ["fp32", "fp16", "bf16"])
def test_hook_matches_the_reference(mode):
    job = loopback_job(2, slots=32, lanes16=True)
    with spotagg.SoftwareSwitch(job, bind=switch_bind(job)) as sw:
        out = spawn(2, gpu_cases.hook_against_reference, job, sw.address, 6, mode)
    for o in out:
        assert not o["fell_back"] and o["switch_ops"] == o["buckets"] > 0, o
        # fp32: the fixed-point bound of test_ddp; half precision: its 16-bit lanes' bound, and
        # a reference that rounds differently, over 6 steps.
        assert max(o["diffs"]) < (1e-5 if mode == "fp32" else 5e-3), o["diffs"]
    assert np.array_equal(out[0]["params"], out[1]["params"]), "ranks disagree"


def test_gradscaler_overflow_on_one_rank_skips_the_step_everywhere():
    job = loopback_job(2, slots=32, lanes16=True)
    with spotagg.SoftwareSwitch(job, bind=switch_bind(job)) as sw:
        out = spawn(2, gpu_cases.hook_against_reference, job, sw.address, 5, "fp16", 2)
    for o in out:
        assert not o["fell_back"], o
        # Both scalers (reference and hooked) halve their scale at step 2, on both ranks.
        ref, hooked = zip(*o["scales"])
        assert hooked == ref and hooked[2] == hooked[1] / 2, o["scales"]
    assert np.array_equal(out[0]["params"], out[1]["params"])


def test_backend_on_cuda_tensors():
    job = loopback_job(2, slots=32)
    with spotagg.SoftwareSwitch(job) as sw:
        out = spawn(2, gpu_cases.backend_cuda, job, sw.address)
    for o in out:
        assert o["int_ok"] and o["float_maxerr"] < 1e-6, o


def test_bucket_pipeline_figures():
    job = loopback_job(2, slots=128)
    with spotagg.SoftwareSwitch(job) as sw:
        out = spawn(2, gpu_cases.pipeline, job, sw.address, 16, 1 << 20)
    for r, o in enumerate(out):
        copies = o["d2h"] + o["h2d"]
        hidden = 1 - max(0.0, o["total"] - o["wire"]) / copies if copies > 0 else 1.0
        print(f"rank {r}: 16 buckets of 4 MB: through the hook {o['total'] * 1e3:.1f} ms, wire alone "
              f"{o['wire'] * 1e3:.1f} ms, copies {o['d2h'] * 1e3:.1f} ms D2H + {o['h2d'] * 1e3:.1f} ms H2D, "
              f"{100 * min(1.0, hidden):.0f} % of the copies hidden")
        assert o["total"] > 0 and o["wire"] > 0
