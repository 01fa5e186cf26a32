"""The bodies of the GPU tier's tests (test_cuda.py), run on each rank by ranks.spawn: CUDA DDP
through the spotagg hook against a reference DDP on the same device and data (NCCL when every
rank has a GPU of its own, else Gloo's CUDA all-reduce), in float32, float16 with GradScaler,
and bfloat16."""

import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

import spotagg.torch as st
from ddp_cases import batch, model, params


def _device(rank):
    dev = torch.device("cuda", rank % torch.cuda.device_count())
    torch.cuda.set_device(dev)
    return dev


def _reference_group(n):
    return dist.new_group(backend="nccl" if torch.cuda.device_count() >= n else "gloo")


def hook_against_reference(rank, n, job, switch, steps, mode, overflow_at=None):
    """`mode`: "fp32", "fp16" (autocast float16 and GradScaler; with `overflow_at`, rank 1
    plants an inf in its loss at that step, and every rank must skip it) or "bf16" (autocast
    bfloat16). Returns the largest parameter difference from the reference per step, the
    scaler's scale per step and the hook's counters."""
    dev = _device(rank)
    ref = DDP(model().to(dev), device_ids=[dev], process_group=_reference_group(n), bucket_cap_mb=0.02)
    hooked = DDP(model().to(dev), device_ids=[dev], bucket_cap_mb=0.02)
    state = st.HookState(switch=switch, job=job)
    hooked.register_comm_hook(state, st.allreduce_hook)
    opts = [torch.optim.SGD(m.parameters(), lr=0.1) for m in (ref, hooked)]
    amp = {"fp16": torch.float16, "bf16": torch.bfloat16}.get(mode)
    scalers = [torch.amp.GradScaler("cuda") for _ in range(2)] if mode == "fp16" else None
    diffs, scales = [], []
    for step in range(steps):
        x, y = (t.to(dev) for t in batch(rank, step))
        for i, (m, o) in enumerate(zip((ref, hooked), opts)):
            o.zero_grad()
            with torch.autocast("cuda", dtype=amp, enabled=amp is not None):
                loss = torch.nn.functional.cross_entropy(m(x), y)
            if overflow_at == step and rank == 1:
                loss = loss * float("inf")
            if scalers is None:
                loss.backward()
                o.step()
            else:
                scalers[i].scale(loss).backward()
                scalers[i].step(o)
                scalers[i].update()
        torch.cuda.synchronize()
        diffs.append(float((params(ref) - params(hooked)).abs().max()))
        if scalers is not None:
            scales.append((scalers[0].get_scale(), scalers[1].get_scale()))
    out = dict(diffs=diffs, scales=scales, switch_ops=state.switch_allreduces, fell_back=state.fell_back,
               buckets=len(state.buckets), params=params(hooked).cpu().numpy())
    state.close()
    return out


def backend_cuda(rank, n, job, switch):
    """The spotagg backend on CUDA tensors: int32 exact, float32 within the bound."""
    import os

    dev = _device(rank)
    os.environ.update(SPOTAGG_JOB=job, SPOTAGG_SWITCH=switch)
    sw = dist.new_group(backend="spotagg")
    t = torch.arange(100_000, dtype=torch.int32, device=dev) * (rank + 1)
    dist.all_reduce(t, group=sw)
    want = torch.arange(100_000, dtype=torch.int32, device=dev) * sum(range(1, n + 1))
    f = torch.full((300_000,), 0.25 * (rank + 1), device=dev)
    dist.all_reduce(f, group=sw)
    return dict(int_ok=bool(torch.equal(t, want)), float_maxerr=float((f - 0.25 * sum(range(1, n + 1))).abs().max()))


def pipeline(rank, n, job, switch, buckets, elements):
    """The bucket pipeline: `buckets` CUDA buckets of `elements` float32 handed to the hook's
    machinery at once (as DDP does during backward); per bucket the device-to-host and
    host-to-device copy times (CUDA events) against the wire time; and the whole."""
    dev = _device(rank)
    state = st.HookState(switch=switch, job=job)
    ts = [torch.randn(elements, device=dev) for _ in range(buckets)]
    for warm in range(2):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        futs = []
        for i, t in enumerate(ts):
            f = torch.futures.Future(devices=[dev])
            state._submit(i, i == buckets - 1, state._staging.stage(t), f)
            futs.append(f)
        for f in futs:
            f.wait()
        torch.cuda.synchronize()
        total = time.perf_counter() - t0
    # The copies alone, one bucket at a time.
    host = torch.empty(elements, pin_memory=True)
    a, b, c = (torch.cuda.Event(enable_timing=True) for _ in range(3))
    a.record()
    host.copy_(ts[0], non_blocking=True)
    b.record()
    ts[0].copy_(host, non_blocking=True)
    c.record()
    torch.cuda.synchronize()
    d2h, h2d = a.elapsed_time(b) / 1e3, b.elapsed_time(c) / 1e3
    # The wire alone: the same buckets from host memory.
    hs = [t.cpu() for t in ts]
    dist.barrier()
    t0 = time.perf_counter()
    for h in hs:
        state.worker.allreduce(h)
    wire = time.perf_counter() - t0
    state.close()
    return dict(total=total, wire=wire, d2h=d2h * buckets, h2d=h2d * buckets)
