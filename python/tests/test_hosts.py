"""Several ranks per host (issue 35): the job lists hosts, each host's ranks reduce among
themselves through Gloo, the host's first rank all-reduces with the switch, and the sum comes
back to the host's ranks. 4 processes as 2 hosts of 2 (the hosts' leaders bind the job's two
loopback addresses) through a SoftwareSwitch of the test process."""

import threading
import time

import numpy as np
import pytest

import spotagg
import ddp_cases
from conftest import loopback_job
from ranks import spawn


def test_two_hosts_of_two_ranks_match_gloo():
    job = loopback_job(2, slots=32)
    steps = 6
    with spotagg.SoftwareSwitch(job) as sw:
        out = spawn(4, ddp_cases.hosts_against_default, job, sw.address, steps, 2)
        counters = sw.counters()
    assert [o["leader"] for o in out] == [True, False, True, False]
    for r, o in enumerate(out):
        assert not o["fell_back"], r
        assert o["switch_ops"] == o["buckets"] > 0, o
        # The local sum in float32, the switch's in fixed point: as close to Gloo as one rank per
        # host is (test_ddp's bound).
        assert max(o["diffs"]) < 1e-5, o["diffs"]
        assert (o["params"] == out[0]["params"]).all(), "ranks disagree"
    # Only the two leaders talked to the switch: its sessions' joins and contributions are from 2
    # workers (every contribution of a round counted once per leader).
    assert counters["contributions"] % 2 == 0 and counters["contributions"] > 0


def test_world_size_must_be_hosts_times_local_size():
    job = loopback_job(3)
    with pytest.raises(AssertionError, match="the job has 3 workers but torch.distributed's world size is 4 \\(2 hosts of 2 ranks\\)"):
        spawn(4, ddp_cases.hosts_against_default, job, "127.0.0.1:9", 1, 2)


def test_two_hosts_fall_back_together_when_the_switch_stops():
    job = loopback_job(2, slots=4, timeout_ms=5, max_retries=4)
    sw = spotagg.SoftwareSwitch(job)
    done = threading.Event()

    def closer():
        while not done.is_set() and sw.counters()["contributions"] < 600:
            time.sleep(0.001)
        sw.close()

    t = threading.Thread(target=closer, daemon=True)
    t.start()
    try:
        out = spawn(4, ddp_cases.hosts_against_default, job, sw.address, 20, 2)
    finally:
        done.set()
        t.join()
        sw.close()
    for r, o in enumerate(out):
        assert o["fell_back"], r
        assert 0 < o["switch_ops"] < o["buckets"], [x["switch_ops"] for x in out]
        assert (o["params"] == out[0]["params"]).all(), "ranks disagree after the fallback"
        assert np.isfinite(o["params"]).all()


def test_the_backend_with_two_hosts_of_two_ranks():
    job = loopback_job(2, slots=32)
    with spotagg.SoftwareSwitch(job) as sw:
        out = spawn(4, ddp_cases.backend_hosts, job, sw.address, 2)
        counters = sw.counters()
    for o in out:
        assert o["int_ok"], o
        assert o["float_maxerr"] < 1e-6, o
        assert o["ddp_diff"] < 1e-5, o
        assert (o["params"] == out[0]["params"]).all()
    assert counters["contributions"] > 0
