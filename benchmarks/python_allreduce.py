#!/usr/bin/env python3
"""spotagg against Gloo on this machine, side by side in one run:

1. the all-reduce time of DDP-sized float32 buckets (25 MB and 1 MB): spotagg.Worker.allreduce
   through the switch, and dist.all_reduce on a Gloo group;
2. the time per training step of a communication-bound model (an MLP of several million
   parameters on a batch of 8: little compute) under DDP with the spotagg hook and with the
   default hook (Gloo).

The switch is a spotagg.SoftwareSwitch (the reference switch, one thread) in this process,
unless --switch IP:PORT --job FILE names a running one. Ranks are processes of this machine on
127.0.0.(10 + rank). Besides the times it prints where spotagg's time goes: the switch thread's
CPU time per second of wall time (this process's CPU time: it does nothing else), the worker's
CPU time per all-reduce (the calling thread: the GIL is released, the driver runs on it), and
the Python overhead (wall time of the call minus the driver's own Stats.seconds).

    .venv-torch/bin/python benchmarks/python_allreduce.py [--ranks 4] [--reps 5]
"""

import argparse
import gc
import os
import socket
import statistics
import sys
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

import spotagg

MB = 1 << 20


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def bucket_times(rank, worker, nbytes, reps):
    a = np.full(nbytes // 4, 0.001 * (rank + 1), dtype=np.float32)
    t = torch.from_numpy(a.copy())
    out = {"spotagg": [], "gloo": [], "driver": [], "worker_cpu": [], "retransmissions": []}
    total = 0.0
    for i in range(reps + 1):
        dist.barrier()
        t0, c0 = time.perf_counter(), time.thread_time()
        st = worker.allreduce(a)
        t1, c1 = time.perf_counter(), time.thread_time()
        dist.barrier()
        t2 = time.perf_counter()
        dist.all_reduce(t)
        t3 = time.perf_counter()
        total += t1 - t0
        if i == 0:
            continue  # warm-up
        out["spotagg"].append(t1 - t0)
        out["driver"].append(st.seconds)
        out["worker_cpu"].append(c1 - c0)
        out["retransmissions"].append(st.retransmissions)
        out["gloo"].append(t3 - t2)
    res = {k: statistics.median(v) for k, v in out.items()}
    res["spotagg_total"] = total
    return res


def model():
    torch.manual_seed(0)
    # 2 x (2048 x 2048) + 2048 x 10: 8.41 M parameters, 33.6 MB of gradients a step.
    return torch.nn.Sequential(
        torch.nn.Linear(2048, 2048), torch.nn.ReLU(), torch.nn.Linear(2048, 2048), torch.nn.ReLU(), torch.nn.Linear(2048, 10)
    )


def step_time(rank, ddp, steps):
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01)
    g = torch.Generator().manual_seed(rank)
    x, y = torch.randn(8, 2048, generator=g), torch.randint(0, 10, (8,), generator=g)
    times = []
    for i in range(steps + 2):
        dist.barrier()
        t0 = time.perf_counter()
        opt.zero_grad()
        torch.nn.functional.cross_entropy(ddp(x), y).backward()
        opt.step()
        times.append(time.perf_counter() - t0)
    return statistics.median(times[2:])


def rank_main(rank, world, port, job, switch, reps, results, restarted):
    from torch.nn.parallel import DistributedDataParallel as DDP

    import spotagg.torch as st

    torch.set_num_threads(1)
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    worker = spotagg.Worker(job, rank, switch)
    out = {}
    for label, nbytes, r in (("25 MB", 25 * MB, reps), ("1 MB", 1 * MB, 4 * reps)):
        out[label] = bucket_times(rank, worker, nbytes, r)
    del worker
    ref = DDP(model())
    out["step gloo"] = step_time(rank, ref, reps * 2)
    hooked = DDP(model())
    state = st.HookState(switch=switch, job=job)
    hooked.register_comm_hook(state, st.allreduce_hook)
    # The hook's worker starts the job afresh (every slot in set 0), so the switch must be a
    # fresh one too: the parent restarts it.
    results.put(("ready", rank, out))
    restarted.wait(120)
    dist.barrier()
    out["step spotagg"] = step_time(rank, hooked, reps * 2)
    out["fell_back"] = state.fell_back
    state.close()
    results.put(("done", rank, out))
    # No DDP module may outlive the group (see examples/train_digits.py's shutdown()).
    del ref, hooked
    gc.collect()
    dist.barrier()
    dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--ranks", type=int, default=4)
    p.add_argument("--reps", type=int, default=5, help="repetitions of a 25 MB all-reduce (1 MB: 4x)")
    p.add_argument("--slots", type=int, default=128, help="slots (= window) of the job, 1024-byte payloads")
    args = p.parse_args()

    job = spotagg.example_job(args.ranks, slots=args.slots)
    sw = spotagg.SoftwareSwitch(job, "127.0.0.1:0")
    ctx = mp.get_context("spawn")
    results = ctx.Queue()
    restarted = ctx.Event()
    procs = [
        ctx.Process(target=rank_main, args=(r, args.ranks, free_port_shared, job, sw.address, args.reps, results, restarted))
        for r, free_port_shared in zip(range(args.ranks), [free_port()] * args.ranks)
    ]
    t_start, cpu_start = time.perf_counter(), time.process_time()
    for pr in procs:
        pr.start()
    got = {}
    phase1_cpu = phase1_wall = None
    for _ in range(args.ranks):
        kind, rank, out = results.get(timeout=900)
        got[rank] = out
    phase1_wall, phase1_cpu = time.perf_counter() - t_start, time.process_time() - cpu_start
    # The hook's workers start a fresh job: a fresh switch on the same address.
    address = sw.address
    sw.close()
    sw = spotagg.SoftwareSwitch(job, address)
    restarted.set()
    t2, c2 = time.perf_counter(), time.process_time()
    for _ in range(args.ranks):
        kind, rank, out = results.get(timeout=900)
        got[rank] = out
    phase2_wall, phase2_cpu = time.perf_counter() - t2, time.process_time() - c2
    for pr in procs:
        pr.join(60)
    sw.close()

    r0 = got[0]
    print(f"spotagg vs Gloo, {args.ranks} ranks on {os.cpu_count()} cores, software switch (reference, 1 thread), "
          f"1024 B payloads, {args.slots} slots")
    print(f"{'what':<34}{'spotagg':>12}{'Gloo':>12}{'ratio':>9}")
    for label in ("25 MB", "1 MB"):
        s, g = r0[label]["spotagg"], r0[label]["gloo"]
        print(f"{'all-reduce ' + label + ' float32':<34}{s * 1e3:>10.1f}ms{g * 1e3:>10.1f}ms{s / g:>9.2f}")
    s, g = r0["step spotagg"], r0["step gloo"]
    print(f"{'DDP step, 8.41 M-param MLP':<34}{s * 1e3:>10.1f}ms{g * 1e3:>10.1f}ms{s / g:>9.2f}")
    print()
    print("where spotagg's bucket time goes (rank 0, medians):")
    for label in ("25 MB", "1 MB"):
        x = r0[label]
        print(f"  {label}: call {x['spotagg'] * 1e3:.1f} ms = driver {x['driver'] * 1e3:.1f} ms + Python/binding "
              f"{(x['spotagg'] - x['driver']) * 1e3:.2f} ms; worker thread CPU {x['worker_cpu'] * 1e3:.1f} ms "
              f"({100 * x['worker_cpu'] / x['spotagg']:.0f}% of the call), {x['retransmissions']:.0f} retransmissions")
    busy = sum(r0[label]["spotagg_total"] for label in ("25 MB", "1 MB"))
    print(f"  switch thread CPU (this process): {phase1_cpu:.2f} s during {busy:.2f} s of spotagg all-reduces "
          f"({100 * phase1_cpu / busy:.0f}% of one core while they ran); {phase2_cpu:.2f} s over the "
          f"{phase2_wall:.1f} s of the spotagg DDP phase")
    print(f"  hook fell back to Gloo: {[got[r]['fell_back'] for r in range(args.ranks)]}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
