"""The DDP communication hook on 3 processes through a SoftwareSwitch of the test process."""

import pytest
import torch

import spotagg
import ddp_cases
from conftest import loopback_job
import ranks
from ranks import spawn

N = 3


def test_hook_matches_the_default_hook_and_keeps_bucket_order():
    job = loopback_job(N, slots=32)
    steps = 8
    with spotagg.SoftwareSwitch(job) as sw:
        out = spawn(N, ddp_cases.hook_against_default, job, sw.address, steps)
        counters = sw.counters()
    for r in range(N):
        assert not out[r]["fell_back"]
        # Several buckets per step, every one through the switch.
        assert out[r]["switch_ops"] == len(out[r]["buckets"]), out[r]["buckets"]
        last_step = out[r]["buckets"][-len(out[r]["buckets"]) // steps :]
        sizes = [size for _, size in out[r]["buckets"][-3:]]
        assert len(set(sizes)) < len(sizes), f"no two buckets of equal size: {out[r]['buckets']}"
        del last_step
        # Quantization error (driver/src/fixedpoint.rs: per element at most about
        # n^2 2^-32 of its packet's largest gradient) grown over 8 SGD steps stays below 1e-5;
        # a bucket summed with another one would give errors of the gradients' size (~1e-2).
        assert max(out[r]["diffs"]) < 1e-5, out[r]["diffs"]
        # All ranks hold the same parameters.
        assert (out[r]["params"] == out[0]["params"]).all()
    assert counters["contributions"] > 0 and counters["duplicates"] < counters["contributions"]


def run_fallback(steps, stop_at, allow_fallback):
    """ddp_cases.fallback on N ranks (`steps` steps) through a switch that a thread of this
    process closes when rank 0 asks for it at step `stop_at`. The ranks' results and the
    switch's address."""
    job = loopback_job(N, slots=32, timeout_ms=5, max_retries=4)
    ctx = ranks.context()
    stop, stopped = ctx.Event(), ctx.Event()
    sw = spotagg.SoftwareSwitch(job)
    import threading

    def closer():
        if stop.wait(120):
            sw.close()
            stopped.set()

    t = threading.Thread(target=closer, daemon=True)
    t.start()
    try:
        out = spawn(N, ddp_cases.fallback, job, sw.address, steps, stop_at, stop, stopped, allow_fallback)
    finally:
        stop.set()
        t.join()
        sw.close()
    return out, sw.address


def test_fallback_to_gloo_when_the_switch_stops():
    out, address = run_fallback(8, 3, True)
    for r in range(N):
        assert out[r]["caught"] is None
        assert out[r]["fell_back"]
        # Every bucket of the first 3 steps went through the switch, none after.
        assert out[r]["switch_ops"] == out[r]["buckets_before_stop"] >= 3
        # From the stop on, the parameters are those of the default (Gloo) hook up to float32
        # rounding: measured 7.45e-9 (2^-27, one ulp of a parameter near 0.1), constant over the
        # 5 steps; the quantization error of a switch step would be ~1e-6 and would grow.
        assert max(out[r]["maxdiff"]) < 5e-8, out[r]["maxdiff"]
        assert len(out[r]["warnings"]) == 1 and address in out[r]["warnings"][0], out[r]["warnings"]


def test_fallback_false_raises():
    out, address = run_fallback(6, 2, False)
    for r in range(N):
        assert out[r]["caught"] is not None, out[r]
        assert "SwitchUnreachable" in out[r]["error"] and address in out[r]["error"], out[r]
        assert not out[r]["fell_back"]


def test_world_size_must_match_the_job():
    job = loopback_job(N + 1)
    out = spawn(N, ddp_cases.wrong_world, job, "127.0.0.1:9")
    assert all(o is not None and "the job has 4 workers but torch.distributed's world size is 3" in o for o in out), out


@pytest.mark.parametrize("loss", [0.0, 0.03])
def test_fallback_when_the_switch_stops_in_the_middle_of_a_step(loss):
    """The switch is closed once it has seen a number of contributions that is not a step
    boundary: the ranks agree on where to fall back and end with the same parameters, close to
    the Gloo run's. With 3% of the datagrams lost (so some results reach a rank only on its
    retransmission), a rank may have a bucket's result that another lacks when the switch
    stops: it joins the Gloo all-reduce of that bucket again."""
    job = loopback_job(N, slots=4, timeout_ms=5, max_retries=4)
    sw = spotagg.SoftwareSwitch(job, loss=loss, seed=7)
    import threading
    import time

    done = threading.Event()

    def closer():
        # A step is ~7 buckets of ~17 packets per rank; 2000 contributions is inside step 10-ish.
        while not done.is_set() and sw.counters()["contributions"] < 2000:
            time.sleep(0.001)
        sw.close()

    t = threading.Thread(target=closer, daemon=True)
    t.start()
    try:
        out = spawn(N, ddp_cases.fallback_mid_step, job, sw.address, 30)
    finally:
        done.set()
        t.join()
        sw.close()
    print("buckets through the switch per rank:", [o["switch_ops"] for o in out], "of", out[0]["buckets"])
    for r in range(N):
        assert out[r]["fell_back"]
        assert 0 < out[r]["switch_ops"] < out[r]["buckets"], [o["switch_ops"] for o in out]
        assert (out[r]["params"] == out[0]["params"]).all(), "ranks disagree after the fallback"
        assert abs(out[r]["params"] - out[r]["ref"]).max() < 1e-5
