"""The torch.distributed backend "spotagg" on 3 processes through a SoftwareSwitch."""

import spotagg
import ddp_cases
from conftest import loopback_job
from ranks import spawn

N = 3


def test_backend_all_reduce_collectives_and_ddp():
    job = loopback_job(N, slots=32)
    with spotagg.SoftwareSwitch(job) as sw:
        out = spawn(N, ddp_cases.backend, job, sw.address)
        counters = sw.counters()
    for r in range(N):
        o = out[r]
        assert o["name"] == "spotagg"
        assert o["int_ok"]
        assert o["float_maxerr"] <= 1e-6, o["float_maxerr"]
        assert o["max"] == N - 1
        assert o["broadcast"] == 8.0
        assert o["gather"] == [[float(i), float(-i)] for i in range(N)]
        # DDP's average through the switch: within quantization of the Gloo run (see test_ddp).
        assert max(o["ddp_diffs"]) < 1e-5, o["ddp_diffs"]
        # The two all_reduce calls and DDP's buckets (several a step, 5 steps) went through the switch.
        assert o["switch_ops"] >= 2 + 2 * 5, o["switch_ops"]
    assert counters["contributions"] > 0
