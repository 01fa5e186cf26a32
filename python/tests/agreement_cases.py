"""Rank functions for test_fallback_agreement.py: the hook's sender thread with a scripted
worker in place of the switch, so that each rank fails exactly where a scenario says. Imported
by the spawned processes."""

import torch
import torch.distributed as dist

import spotagg.torch as st
from spotagg import SpotaggError

N = 3
ELEMS = 5


class ScriptedWorker:
    """Stands in for spotagg.Worker: operation k "through the switch" gives 1000 + k (a value
    the Gloo sum of the inputs, 6 + 30 k, never takes), and raises SpotaggError at the
    operations listed for this rank."""

    def __init__(self, rank, fail_at):
        self.rank = rank
        self.switch = "scripted"
        self.fail_at = set(fail_at)
        self.op = 0

    def allreduce(self, tensor, lanes=32):
        assert lanes == 32, "the scripted job has no 16-bit lanes"
        k = self.op
        self.op += 1
        if k in self.fail_at:
            raise SpotaggError(f"scripted failure of operation {k} at rank {self.rank}")
        tensor.fill_(1000.0 + k)


def switch_value(k):
    return 1000.0 + k


def gloo_value(k):
    return float(sum(r + 1 for r in range(N)) + 30 * k)


def _input(rank, k):
    return torch.full((ELEMS,), float(rank + 1 + 10 * k))


def run(rank, n, steps, fail_at, store=True, between="all_reduce"):
    """Submits the operations of `steps` (a list of operation counts, one per step) to a
    sender; between two steps the main thread waits for its step's futures and then, with
    `between="all_reduce"`, runs an all-reduce on the default group, which needs every rank's
    main thread (so a rank that is ahead cannot send anything until the failing rank's step is
    over). Returns the value of every operation's result and what the sender saw."""
    gloo = dist.new_group(backend="gloo")
    worker = ScriptedWorker(rank, fail_at.get(rank, ()))
    sender = st._Sender(
        worker,
        st._backend_of(gloo),
        n,
        rank,
        True,
        st._default_store() if store else None,
        f"spotagg/fallback/{st._group_name(gloo)}",
    )
    values = []
    k = 0
    for ops in steps:
        futs = []
        for _ in range(ops):
            t = _input(rank, k)
            fut = torch.futures.Future()
            sender.submit(t, fut)
            futs.append(fut)
            k += 1
        for fut in futs:
            out = fut.wait()
            assert (out == out[0]).all()
            values.append(float(out[0]))
        if between == "all_reduce":
            x = torch.ones(1)
            dist.all_reduce(x)
    sender.close()
    return dict(values=values, fell_back=sender.use_gloo, switch_ops=sender.switch_ops, error=repr(sender.error))
