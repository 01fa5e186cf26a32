"""Mixed and half precision through the DDP hook (issue 35): a GradScaler overflow on one rank
skips the same step on every rank with the switch still in use, and float16 / bfloat16 buckets
go through the switch (widened to float32 on the host), close to Gloo's."""

import numpy as np
import pytest

import spotagg
import ddp_cases
from conftest import loopback_job, switch_bind
from ranks import spawn

N = 3


def test_gradscaler_overflow_on_one_rank_skips_the_step_on_every_rank():
    """Before exponent 127 (docs/switch.md §2.0) the worker refused the non-finite bucket and
    the hook fell back to Gloo for the rest of the run: `fell_back` was True here."""
    job = loopback_job(N, slots=32)
    steps, bad = 6, 3
    with spotagg.SoftwareSwitch(job) as sw:
        out = spawn(N, ddp_cases.gradscaler_overflow, job, sw.address, steps, bad, 1)
    for r in range(N):
        o = out[r]
        assert not o["fell_back"], f"rank {r} fell back: {o['error']}"
        assert o["switch_ops"] == o["buckets"], o
        # Every rank skipped step `bad` (parameters unchanged) and halved its scale there, and
        # took every other step.
        assert o["changed"] == [s != bad for s in range(steps)], (r, o["changed"])
        assert o["scales"][bad] == o["scales"][bad - 1] / 2, (r, o["scales"])
        assert o["scales"] == out[0]["scales"]
        assert (o["params"] == out[0]["params"]).all(), "ranks disagree"
        assert np.isfinite(o["params"]).all()


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_precision_buckets_go_through_the_switch(dtype):
    job = loopback_job(N, slots=32)
    with spotagg.SoftwareSwitch(job) as sw:
        out = spawn(N, ddp_cases.half_precision, job, sw.address, 4, dtype)
    for r in range(N):
        o = out[r]
        assert o["dtypes"] == [f"torch.{dtype}"], o["dtypes"]
        assert not o["fell_back"] and o["switch_ops"] == o["buckets"] > 0, o
        assert (o["params"] == out[0]["params"]).all(), "ranks disagree"
        # Gloo sums in 16 bits pairwise; the switch in 32-bit fixed point, rounded once: the
        # two differ by a few 16-bit roundings over 4 steps (float16 eps 1e-3, bfloat16 8e-3).
        tol = {"float16": 4e-3, "bfloat16": 3e-2}[dtype]
        diff = np.abs(o["params"] - o["ref"]).max()
        assert diff < tol, f"{dtype}: the hook's parameters differ from Gloo's by {diff}"


@pytest.mark.parametrize(
    "dtype,compression,tol",
    [("float32", "lanes16", 2e-3), ("float16", None, 4e-3), ("bfloat16", None, 3e-2)],
)
def test_16_bit_lanes_through_the_hook(dtype, compression, tol):
    """A job with lanes16: float16/bfloat16 buckets, and float32 ones with compression="lanes16",
    go through the switch as 16-bit lanes (half the bytes), every bucket, close to Gloo's."""
    job = loopback_job(N, slots=32, lanes16=True)
    with spotagg.SoftwareSwitch(job, bind=switch_bind(job)) as sw:
        out = spawn(N, ddp_cases.half_precision, job, sw.address, 4, dtype, compression)
        counters = sw.counters()
    for r in range(N):
        o = out[r]
        assert not o["fell_back"], o["error"]
        assert o["lanes16_ops"] == o["switch_ops"] == o["buckets"] > 0, o
        assert (o["params"] == out[0]["params"]).all(), "ranks disagree"
        diff = np.abs(o["params"] - o["ref"]).max()
        assert diff < tol, f"{dtype}: the hook's parameters differ from Gloo's by {diff}"
    assert counters["lane_mismatch"] == 0


def test_lanes16_compression_needs_the_job():
    job = loopback_job(N, slots=8)
    with spotagg.SoftwareSwitch(job) as sw:
        out = spawn(N, ddp_cases.lanes16_refused, job, sw.address)
    assert all(o is not None and "lanes16 = true" in o for o in out), out
