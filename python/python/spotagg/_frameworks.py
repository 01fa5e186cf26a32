"""What spotagg.keras, spotagg.jax and spotagg.tensorflow share: a Worker from the environment,
and the check that every rank presents the same list of tensors before it is summed."""

import os
import time
import zlib

import numpy as np

from ._native import SpotaggError, Worker, register


def worker_from_env():
    """A Worker from the environment (docs/python.md): the rank from SPOTAGG_RANK (or RANK, as
    torchrun and most launchers set it), the world size from SPOTAGG_WORLD_SIZE (or
    WORLD_SIZE); the job from SPOTAGG_JOB (a path or TOML text) and the switch from
    SPOTAGG_SWITCH, or, without a job, from the controller at SPOTAGG_CONTROLLER (this host's
    address SPOTAGG_BIND, else its address on the route to the controller). A missing or bad
    variable is a ValueError naming it."""

    def get(*names):
        for n in names:
            v = os.environ.get(n)
            if v:
                return n, v
        return None, None

    def number(names):
        n, v = get(*names)
        if v is None:
            raise ValueError(f"spotagg: no {' or '.join(names)} in the environment (this process's rank and world size)")
        try:
            x = int(v)
        except ValueError:
            raise ValueError(f"spotagg: {n} = {v!r} is not a whole number") from None
        if x < 0:
            raise ValueError(f"spotagg: {n} = {v!r} is negative")
        return x

    rank = number(("SPOTAGG_RANK", "RANK"))
    world = number(("SPOTAGG_WORLD_SIZE", "WORLD_SIZE"))
    if rank >= world:
        raise ValueError(f"spotagg: rank {rank} is not below the world size {world}")
    job, switch, ctl = os.environ.get("SPOTAGG_JOB"), os.environ.get("SPOTAGG_SWITCH"), os.environ.get("SPOTAGG_CONTROLLER")
    bind = os.environ.get("SPOTAGG_BIND") or None
    if not job:
        if not ctl:
            raise ValueError("spotagg: neither SPOTAGG_JOB (with SPOTAGG_SWITCH) nor SPOTAGG_CONTROLLER is set")
        ip = bind.rpartition(":")[0] if bind and ":" in bind else (bind or _route(ctl))
        job = register(ctl, rank, world, ip, scope=_scope())
        import tomllib

        t = tomllib.loads(job)
        return Worker(job, rank, switch or f"{t['switch_ip']}:{t['switch_port']}")
    if not switch:
        raise ValueError("spotagg: SPOTAGG_JOB is set but SPOTAGG_SWITCH (\"IP:PORT\") is not")
    return Worker(job, rank, switch, bind if bind and ":" in bind else None)


def _route(controller: str) -> str:
    import socket

    host, _, port = controller.rpartition(":")
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.connect((host, int(port)))
        return s.getsockname()[0]


def _scope() -> int:
    addr, port = os.environ.get("MASTER_ADDR"), os.environ.get("MASTER_PORT")
    return zlib.crc32(f"{addr}:{port}".encode()) | 1 << 32 if addr and port else 0


#: Seconds spent on the host by spotagg.keras / jax / tensorflow all-reduces in this process:
#: `calls`, `check_s` (the list check), `allreduce_s` (the Worker's all-reduces of the tensors),
#: `host_s` (the whole host call: check, packing, all-reduce, unpacking). For the examples'
#: cost table; reset with STATS.update(calls=0, ...).
#: `skip`: calls not to count yet (an example's first epoch, which compiles the step).
STATS = {"calls": 0, "check_s": 0.0, "allreduce_s": 0.0, "host_s": 0.0, "skip": 0}


class timed:
    """Adds the time of a `with` block to STATS[key] (unless calls are being skipped)."""

    def __init__(self, key):
        self.key = key

    def __enter__(self):
        self.t0 = time.perf_counter()

    def __exit__(self, *exc):
        if STATS["calls"] > STATS["skip"]:
            STATS[self.key] += time.perf_counter() - self.t0


def check_same(worker, what: str, signature):
    """Raises SpotaggError on every rank when the ranks' `signature`s (a list of (shape, dtype),
    one per tensor, None for a None gradient) differ: one small int32 all-reduce of a hash of
    it, before the tensors themselves, whose element counts would otherwise differ between the
    ranks and mix tensors in the switch."""
    text = repr(signature).encode()
    h = zlib.crc32(text) & 0xFFFFFF
    buf = np.array([h, 1, len(signature)], dtype=np.int32)
    with timed("check_s"):
        worker.allreduce(buf)
    n = worker.world_size
    if int(buf[0]) != n * h or int(buf[1]) != n:
        raise SpotaggError(
            f"spotagg: {what}: rank {worker.rank}'s list of {len(signature)} tensors differs from another rank's "
            f"(the ranks sent {int(buf[2])} tensors in all for {n} ranks); every rank must present the same "
            f"ordered list, None gradients included. This rank's: {_short(signature)}"
        )


def _short(signature):
    s = ", ".join("None" if x is None else f"{tuple(x[0])}:{x[1]}" for x in signature[:8])
    return f"[{s}{', ...' if len(signature) > 8 else ''}]"


def host_allreduce(worker, what: str, arrays, op: str = "mean", lanes: int = 32):
    """The host side of spotagg.keras, .jax and .tensorflow: numpy `arrays` summed (or averaged,
    ``op="mean"``; int32 floor-divided) over the ranks, after check_same: int32 arrays as one
    int32 buffer (exact), every other dtype as one float32 buffer (`lanes` bits on the wire),
    each given back in its shape and dtype. Timed into STATS."""
    STATS["calls"] += 1
    with timed("host_s"):
        check_same(worker, what, [(np.shape(a), str(np.dtype(a.dtype))) for a in arrays])
        out = list(arrays)
        ints = [i for i, a in enumerate(arrays) if np.dtype(a.dtype) == np.int32]
        floats = [i for i, a in enumerate(arrays) if np.dtype(a.dtype) != np.int32]
        for idx, dtype in ((floats, np.float32), (ints, np.int32)):
            if not idx:
                continue
            buf = np.concatenate([np.asarray(arrays[i], dtype=dtype).reshape(-1) for i in idx])
            with timed("allreduce_s"):
                worker.allreduce(buf, lanes=lanes if dtype == np.float32 else 32)
            if op == "mean":
                buf = buf / worker.world_size if dtype == np.float32 else buf // worker.world_size
            at = 0
            for i in idx:
                n = int(np.prod(np.shape(arrays[i])))
                out[i] = buf[at:at + n].reshape(np.shape(arrays[i])).astype(arrays[i].dtype)
                at += n
        return out
