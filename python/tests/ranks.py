"""Runs a function on N processes (torch.multiprocessing, spawn) with a Gloo default group on
127.0.0.1, and collects what each rank returns. Imported by the spawned processes."""

import gc
import os
import socket
import traceback

import torch.multiprocessing as mp


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
    ctx = mp.get_context("spawn")
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
