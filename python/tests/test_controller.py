"""Jobs without a job file (issue 36, docs/controller.md §7): a SoftwareSwitch with a
controller, workers that register with `spotagg.register`, the DDP hook with `controller=` on
2 hosts of 2 ranks, and torchrun with only SPOTAGG_CONTROLLER and SPOTAGG_TOKEN set."""

import os
import re
import subprocess
import sys

import numpy as np
import pytest

import spotagg
import ddp_cases
from conftest import run_ranks
from ranks import spawn, free_port

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_workers_register_and_sum_exactly():
    with spotagg.SoftwareSwitch(controller="127.0.0.1:0") as sw:
        ctl = sw.controller_address

        def rank(r):
            job = spotagg.register(ctl, r, 3, f"127.0.0.{50 + r}", payload_bytes=512, timeout=20)
            w = spotagg.Worker(job, r, sw.address)
            x = np.arange(10_000, dtype=np.int32) * (r + 1)
            w.allreduce(x)
            return job, x

        out = run_ranks(3, rank)
        counters = sw.counters()
    assert all(job == out[0][0] for job, _ in out), "every rank gets the same job"
    assert "payload_bytes = 512" in out[0][0] and 'ip = "127.0.0.52"' in out[0][0]
    for _, x in out:
        assert np.array_equal(x, np.arange(10_000, dtype=np.int32) * 6)
    assert counters["contributions"] > 0


def test_refusals_are_controller_errors_naming_the_field():
    with spotagg.SoftwareSwitch(controller="127.0.0.1:0") as sw:
        # Rank 0 broadcasts its session id first: with 40 workers the Broadcast is refused.
        with pytest.raises(spotagg.ControllerError, match="Broadcast refused .*num_workers = 40: must be 1..=32"):
            spotagg.register(sw.controller_address, 0, 40, "127.0.0.50", timeout=5)
    assert issubclass(spotagg.ControllerError, spotagg.SpotaggError)
    with spotagg.SoftwareSwitch(controller="127.0.0.1:0", token="t0k") as sw:
        with pytest.raises(spotagg.ControllerError, match="PermissionDenied"):
            spotagg.register(sw.controller_address, 0, 1, "127.0.0.50", timeout=5, token="wrong")
        job = spotagg.register(sw.controller_address, 0, 1, "127.0.0.50", timeout=5, token="t0k")
        assert "[[worker]]" in job


def test_two_hosts_of_two_ranks_through_the_controller_match_gloo():
    with spotagg.SoftwareSwitch(controller="127.0.0.1:0") as sw:
        out = spawn(4, ddp_cases.hosts_via_controller, sw.controller_address, 5, 2)
    assert [o["leader"] for o in out] == [True, False, True, False]
    assert [o["world"] for o in out] == [2, None, 2, None], "the job lists the 2 hosts"
    for r, o in enumerate(out):
        assert not o["fell_back"], r
        assert o["switch_ops"] == o["buckets"] > 0, o
        assert max(o["diffs"]) < 1e-5, o["diffs"]
        assert (o["params"] == out[0]["params"]).all(), "ranks disagree"


def _torchrun(env, *args):
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nnodes", "1", "--nproc-per-node", "4",
           "--master-addr", "127.0.0.1", "--master-port", str(free_port()),
           os.path.join(ROOT, "examples", "train_digits.py"), "--epochs", "2", *args]
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    return p.stdout


def test_torchrun_with_only_the_controller_set_trains_as_gloo(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("SPOTAGG_")}
    env["OMP_NUM_THREADS"] = "1"
    # The switch at 127.0.0.2, so that the ranks' route to it leaves from 127.0.0.1, an address
    # other than the switch's, as on a network.
    with spotagg.SoftwareSwitch(bind="127.0.0.2:0", controller="127.0.0.2:0", token="digits") as sw:
        run = dict(env, SPOTAGG_CONTROLLER=sw.controller_address, SPOTAGG_TOKEN="digits")
        spot = _torchrun(run, "--results", str(tmp_path / "spot"))
        counters = sw.counters()
    gloo = _torchrun(env, "--baseline", "gloo", "--results", str(tmp_path / "gloo"))
    # One host of 4 ranks: its leader is the job's one worker; every bucket through the switch.
    assert counters["contributions"] > 0
    last = lambda out: re.findall(r"epoch +2 +loss ([0-9.]+) +test accuracy ([0-9.]+)%", out)[-1]  # noqa: E731
    assert last(spot) == last(gloo), (spot[-1500:], gloo[-1500:])
