"""Runs a function on N processes (torch.multiprocessing) with a Gloo default group on 127.0.0.1,
and collects what each rank returns. Imported by the rank processes.

The ranks fork from a forkserver that imported torch, the spotagg package and the test cases
once: a rank started with `spawn` imports torch itself, about 2 s of CPU, and the Python tier
starts about 90 of them. The forkserver is a process of its own, started by exec and
single-threaded when it forks, so a rank begins as a spawned one would, minus the imports."""

import gc
import os
import socket
import traceback

import torch.multiprocessing as mp


# Modules the forkserver imports before it forks a rank (an import error only leaves a module to
# the rank, as with spawn).
PRELOAD = ["torch", "torch.distributed", "spotagg", "spotagg.torch", "ranks", "ddp_cases", "agreement_cases"]


def context():
    """The multiprocessing context of the ranks and of what the tests share with them (events,
    queues)."""
    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(PRELOAD)
    return ctx


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _entry(rank, n, port, fn, args, results):
    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    try:
        dist.init_process_group("gloo", rank=rank, world_size=n)
        out = fn(rank, n, *args)
        gc.collect()  # no DDP module may outlive the group (see examples/train_digits.py)
        dist.barrier()
        dist.destroy_process_group()
        results.put((rank, "ok", out))
    except BaseException:  # noqa: BLE001 - reported to the parent
        results.put((rank, "error", traceback.format_exc()))


def spawn(n, fn, *args, timeout=180.0):
    """fn(rank, n, *args) on n processes; returns [result of rank 0, ...]. Raises with the rank's
    traceback if one failed, or if a rank does not answer within `timeout` seconds."""
    ctx = context()
    results = ctx.Queue()
    port = free_port()
    procs = [ctx.Process(target=_entry, args=(r, n, port, fn, args, results), daemon=True) for r in range(n)]
    for p in procs:
        p.start()
    out = [None] * n
    try:
        for _ in range(n):
            rank, status, value = results.get(timeout=timeout)
            if status != "ok":
                raise AssertionError(f"rank {rank} failed:\n{value}")
            out[rank] = value
    finally:
        for p in procs:
            p.join(10)
            if p.is_alive():
                p.kill()
    return out
