"""Failover to a standby switch (issue 19): spotagg.Worker given two switches moves to the
standby when the primary is closed while the ranks all-reduce, every result stays exact, and
the stats say which switch served, the failover and its stall."""

import threading
import time

import numpy as np

import spotagg
from conftest import loopback_job, run_ranks


def test_ranks_move_to_the_standby_and_report_it():
    n = 3
    job = loopback_job(n, slots=16)
    primary = spotagg.SoftwareSwitch(job, bind="127.0.0.1:0")
    standby = spotagg.SoftwareSwitch(job, bind="127.0.0.1:0")
    switches = [primary.address, standby.address]
    closer = threading.Timer(0.3, primary.close)
    closer.start()
    rng = np.random.default_rng(19)
    inputs = [rng.integers(-(2**31), 2**31, size=100_000, dtype=np.int32) for _ in range(n)]
    want = np.sum(np.stack(inputs).astype(np.int64), axis=0).astype(np.int64)
    want = ((want + 2**31) % 2**32 - 2**31).astype(np.int32)

    def rank(r):
        w = spotagg.Worker(job, r, switches)
        seen = []
        for _ in range(2000):
            a = inputs[r].copy()
            s = w.allreduce(a)
            assert np.array_equal(a, want), f"rank {r}: wrong sum on switch {s.switch_name}"
            seen.append(s)
            if s.switch == 1 and sum(1 for x in seen if x.switch == 1) >= 3:
                break
        return seen

    try:
        per_rank = run_ranks(n, rank)
    finally:
        closer.cancel()
        standby.close()
        primary.close()
    for r, seen in enumerate(per_rank):
        moves = [f for s in seen for f in s.failovers]
        assert len(moves) == 1, f"rank {r}: {moves}"
        assert (moves[0]["from"], moves[0]["to"]) == ("0", "1")
        assert float(moves[0]["stall_seconds"]) > 0
        assert seen[0].switch == 0 and seen[0].switch_name == switches[0]
        assert seen[-1].switch == 1 and seen[-1].switch_name == switches[1]
        assert seen[-1].epoch is not None
        print(f"rank {r}: failover stall {float(moves[0]['stall_seconds']) * 1e3:.1f} ms ({moves[0]['reason']})")
